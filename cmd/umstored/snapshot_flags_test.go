package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"umstore/placement"
	"umstore/storegroup"
	"umstore/storehost"
)

// The log-compaction flags reach every store's configuration, keep
// storegroup's defaults when not given, and refuse what raft would reject.
func TestSnapshotFlags(t *testing.T) {
	def := storegroup.DefaultConfig()
	for _, tc := range []struct {
		name      string
		args      []string
		threshold uint64
		interval  time.Duration
		trailing  uint64
		err       string // part of the refusal; empty when accepted
	}{
		{name: "defaults", threshold: def.SnapshotThreshold, interval: def.SnapshotInterval, trailing: def.TrailingLogs},
		{name: "small values for tests", args: []string{"--snapshot-threshold", "64", "--snapshot-interval", "1s", "--trailing-logs", "16"}, threshold: 64, interval: time.Second, trailing: 16},
		{name: "one flag keeps the others' defaults", args: []string{"--trailing-logs=10240"}, threshold: def.SnapshotThreshold, interval: def.SnapshotInterval, trailing: 10240},
		{name: "no trailing logs", args: []string{"--trailing-logs", "0"}, threshold: def.SnapshotThreshold, interval: def.SnapshotInterval, trailing: 0},
		{name: "raft's shortest interval", args: []string{"--snapshot-interval", "5ms"}, threshold: def.SnapshotThreshold, interval: 5 * time.Millisecond, trailing: def.TrailingLogs},
		{name: "threshold 1", args: []string{"--snapshot-threshold", "1"}, threshold: 1, interval: def.SnapshotInterval, trailing: def.TrailingLogs},
		{name: "zero threshold", args: []string{"--snapshot-threshold", "0"}, err: "--snapshot-threshold must be at least 1"},
		{name: "zero interval", args: []string{"--snapshot-interval", "0s"}, err: "--snapshot-interval 0s is too short"},
		{name: "interval below raft's minimum", args: []string{"--snapshot-interval", "4ms"}, err: "raft needs at least 5ms"},
		{name: "negative interval", args: []string{"--snapshot-interval", "-1s"}, err: "--snapshot-interval -1s is too short"},
		{name: "negative threshold", args: []string{"--snapshot-threshold", "-1"}, err: `invalid argument "-1" for "--snapshot-threshold"`},
		{name: "trailing logs not a number", args: []string{"--trailing-logs", "many"}, err: `invalid argument "many" for "--trailing-logs"`},
		{name: "interval without a unit", args: []string{"--snapshot-interval", "2"}, err: `invalid argument "2" for "--snapshot-interval"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			flags := defaultStoreFlags()
			flags.bind(fs, true)
			err := fs.Parse(tc.args)
			if err == nil {
				err = flags.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := placement.Dev("127.0.0.1", 14000)
			cfgs, err := storehost.Configs(d, "A", t.TempDir(), flags.config(flags.policy))
			if err != nil {
				t.Fatal(err)
			}
			cfg := cfgs[0]
			if cfg.SnapshotThreshold != tc.threshold || cfg.SnapshotInterval != tc.interval || cfg.TrailingLogs != tc.trailing {
				t.Fatalf("store config: threshold %d interval %v trailing %d, want %d %v %d",
					cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.TrailingLogs, tc.threshold, tc.interval, tc.trailing)
			}
		})
	}
}

// Both commands that run stores refuse bad snapshot settings before they
// start anything, and show the flags with their real defaults in --help.
func TestRunAndDevSnapshotFlags(t *testing.T) {
	dir := t.TempDir()
	commands := map[string]struct {
		cmd  func(args []string, stdout, stderr io.Writer) int
		args []string
	}{
		"run": {cmdRun, []string{"--deployment", filepath.Join(dir, "none.yaml"), "--host", "A", "--data-dir", dir}},
		"dev": {cmdDev, []string{"--data-dir", dir, "--admin-addr", ""}},
	}
	for name, c := range commands {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := c.cmd(append(c.args, "--snapshot-interval", "1ms"), &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), "umstored "+name+": --snapshot-interval 1ms is too short") {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
			}
			out.Reset()
			errOut.Reset()
			if code := c.cmd([]string{"--help"}, &out, &errOut); code != 0 {
				t.Fatalf("--help: exit %d", code)
			}
			def := storegroup.DefaultConfig()
			for flag, want := range map[string]string{
				"--snapshot-threshold uint":    fmt.Sprint(def.SnapshotThreshold),
				"--snapshot-interval duration": def.SnapshotInterval.String(),
				"--trailing-logs uint":         fmt.Sprint(def.TrailingLogs),
			} {
				if !helpLineHas(errOut.String(), flag, "(default "+want+")") {
					t.Errorf("--help lacks %s with (default %s):\n%s", flag, want, errOut.String())
				}
			}
		})
	}
}

// helpLineHas reports whether the --help line of flag contains want.
func helpLineHas(help, flag, want string) bool {
	for _, line := range strings.Split(help, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), flag) {
			return strings.Contains(line, want)
		}
	}
	return false
}

// --log-store reaches every store's configuration (wal by default) and
// refuses anything but wal and boltdb, on run and dev alike.
func TestLogStoreFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{want: storegroup.LogStoreWAL},
		{args: []string{"--log-store", "boltdb"}, want: storegroup.LogStoreBoltDB},
		{args: []string{"--log-store=wal"}, want: storegroup.LogStoreWAL},
		{args: []string{"--log-store", "rocksdb"}, err: `--log-store "rocksdb": want "wal"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			flags := defaultStoreFlags()
			flags.bind(fs, true)
			err := fs.Parse(tc.args)
			if err == nil {
				err = flags.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfgs, err := storehost.Configs(placement.Dev("127.0.0.1", 14000), "A", t.TempDir(), flags.config(flags.policy))
			if err != nil {
				t.Fatal(err)
			}
			if cfgs[0].LogStore != tc.want {
				t.Fatalf("store config: LogStore %q, want %q", cfgs[0].LogStore, tc.want)
			}
		})
	}
	dir := t.TempDir()
	for name, cmd := range map[string]func(args []string, stdout, stderr io.Writer) int{"run": cmdRun, "dev": cmdDev} {
		var out, errOut bytes.Buffer
		args := []string{"--data-dir", dir, "--admin-addr", "", "--log-store", "x"}
		if name == "run" {
			args = []string{"--deployment", filepath.Join(dir, "none.yaml"), "--host", "A", "--data-dir", dir, "--log-store", "x"}
		}
		if code := cmd(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `--log-store "x"`) {
			t.Errorf("%s --log-store x: exit %d, stderr:\n%s", name, code, errOut.String())
		}
	}
}
