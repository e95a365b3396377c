package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"umstore/placement"
	"umstore/storegroup"
)

// A host whose address is a name that does not resolve is refused at once,
// naming the host and the name, not with a listener's "is another store
// using the port?".
func TestRunRefusesAnUnresolvableHostName(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	d.Hosts[1].Address = "store-b.invalid"
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cmdRun([]string{"--deployment", path, "--host", "B", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `umstored run: host B: its address "store-b.invalid" does not resolve`) || strings.Contains(errOut.String(), "another store") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
	}
}

// --pprof without an admin address is a usage error.
func TestRunPprofNeedsAnAdminAddress(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cmdRun([]string{"--deployment", "d.yaml", "--host", "A", "--data-dir", t.TempDir(), "--pprof"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--pprof serves the profiler on the admin address: give --admin-addr too") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
	}
}

// A hand-written file whose layout cannot survive the loss of one host
// (two hosts, one group: its majority is on one of them) is refused with
// the planner's failure analysis, unless --accept-unsafe-layout is given.
func TestRunRefusesAnUnsafeLayout(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	d.Groups = d.Groups[:1]
	d.Groups[0].PreferredHost = ""
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cmdRun([]string{"--deployment", path, "--host", "A", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &errOut)
	for _, want := range []string{"losing some single host stops publishing", "If host A is lost (G1S1, G1S2 stop):", "group 1: 1 of 3 stores left, loses its quorum", "--accept-unsafe-layout"} {
		if code != 1 || !strings.Contains(errOut.String(), want) {
			t.Fatalf("exit %d, stderr lacks %q:\n%s", code, want, errOut.String())
		}
	}
	// Accepted, it goes on (and stops at the next problem: no host Z).
	errOut.Reset()
	code = cmdRun([]string{"--deployment", path, "--host", "Z", "--data-dir", t.TempDir(), "--log-level", "error", "--accept-unsafe-layout"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `host "Z" is not in the deployment`) {
		t.Fatalf("with --accept-unsafe-layout: exit %d, stderr:\n%s", code, errOut.String())
	}
}

// The stores run the deployment's policy; a flag overrides a value for
// this daemon only, and says so.
func TestPolicyFlagsOverrideTheFileWithAWarning(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := defaultStoreFlags()
	flags.bind(fs, true)
	if err := fs.Parse([]string{"--source-activity-timeout", "5s"}); err != nil {
		t.Fatal(err)
	}
	p := placement.DefaultPolicy()
	p.Retention.MaxMessages = 77 // from the file, not overridden
	var logs bytes.Buffer
	policy, err := overPolicy(fs, p, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := flags.config(policy)
	if cfg.SourceActivityTimeout != 5*time.Second || cfg.RetentionMaxMessages != 77 || cfg.RetentionMaxBytes != p.Retention.MaxBytes {
		t.Fatalf("config %+v", cfg)
	}
	if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "flag=--source-activity-timeout value=5s deployment_file=30s") {
		t.Fatalf("warnings:\n%s", got)
	}
	if cfg.PolicyDigest == p.Digest() {
		t.Fatal("the overridden policy has the file's digest: the group's leader would not notice")
	}
}

// The daemon's policy is the file's with the flags given over it: a key no
// flag was given for keeps the file's value (not the flag's default), a
// flag given beats the file, zero included where zero is a setting, and a
// flag's value that holds no setting stands for the default, as in the
// file.
func TestOverPolicy(t *testing.T) {
	file := placement.DefaultPolicy()
	file.Retention.MaxMessages, file.Snapshot.TrailingLogs, file.RepairRate = 77, 10, 1000
	file.Lock = placement.LockPolicy{Mode: placement.LockLease, KeepAlive: placement.Duration(2 * time.Second)}
	def := placement.DefaultPolicy()
	for _, tc := range []struct {
		name  string
		args  []string
		want  func(p *placement.Policy) // from the file's
		warns int
	}{
		{"no flag: the file's", nil, func(p *placement.Policy) {}, 0},
		{"unrelated flags: the file's", []string{"--receiver-activity-timeout", "7s", "--log-store", "boltdb"}, func(p *placement.Policy) {}, 0},
		{"flags beat the file", []string{"--retention-max-messages", "5", "--trailing-logs", "20", "--snapshot-interval", "1s"}, func(p *placement.Policy) {
			p.Retention.MaxMessages, p.Snapshot.TrailingLogs, p.Snapshot.Interval = 5, 20, placement.Duration(time.Second)
		}, 3},
		{"zero is a setting", []string{"--retention-max-bytes", "0", "--retention-max-messages=0", "--trailing-logs", "0", "--retention-max-age", "0s"}, func(p *placement.Policy) {
			p.Retention.MaxBytes, p.Retention.MaxMessages, p.Snapshot.TrailingLogs = 0, 0, 0
		}, 4},
		{"a flag at its default still beats the file", []string{"--trailing-logs", "4096", "--repair-rate", "33554432"}, func(p *placement.Policy) {
			p.Snapshot.TrailingLogs, p.RepairRate = 4096, def.RepairRate
		}, 2},
		{"zero that holds no setting: the default", []string{"--repair-rate", "0", "--source-activity-timeout", "0s"}, func(p *placement.Policy) {
			p.RepairRate, p.SourceActivityTimeout = def.RepairRate, def.SourceActivityTimeout
		}, 2},
		{"lock flags", []string{"--lock", "flock", "--lock-keepalive", "3s"}, func(p *placement.Policy) {
			p.Lock = placement.LockPolicy{Mode: placement.LockFlock, KeepAlive: placement.Duration(3 * time.Second)}
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			flags := defaultStoreFlags()
			flags.bind(fs, true)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := flags.Validate(); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			got, err := overPolicy(fs, file, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			want := file
			tc.want(&want)
			cfg := flags.config(got)
			if cfg.Policy != want.WithDefaults().Canonical() {
				t.Errorf("policy run:\n %s\nwant\n %s", cfg.Policy, want.WithDefaults().Canonical())
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != tc.warns {
				t.Errorf("%d warnings, want %d:\n%s", n, tc.warns, logs.String())
			}
		})
	}
}

// runConfig parses args as `umstored run`'s store flags and returns the
// configuration its stores start from under the default policy, and the
// flag set.
func runConfig(t *testing.T, args ...string) (storegroup.Config, *pflag.FlagSet) {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := defaultStoreFlags()
	flags.bind(fs, true)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	policy, err := overPolicy(fs, placement.DefaultPolicy(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return flags.config(policy), fs
}

// The receiver flags are no part of the policy: run applies them as given
// (they were parsed and then dropped, so `umstored run
// --allow-receiver-paced-persistence` refused every paced publisher).
func TestRunAppliesTheReceiverFlags(t *testing.T) {
	cfg, _ := runConfig(t, "--allow-receiver-paced-persistence", "--receiver-activity-timeout", "7s", "--receiver-state-lifetime", "1m", "--repository-commit-interval", "40ms")
	if !cfg.AllowReceiverPacedPersistence || cfg.ReceiverActivityTimeout != 7*time.Second || cfg.ReceiverStateLifetime != time.Minute || cfg.RepositoryCommitInterval != 40*time.Millisecond {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.PolicyDigest != placement.DefaultPolicy().Digest() {
		t.Fatal("the receiver flags changed the policy's digest: they are no part of it")
	}
}

// The client registration limits are store settings, no part of the
// policy: run applies them as given, and their defaults are the store's.
func TestRunAppliesTheClientLimitFlags(t *testing.T) {
	cfg, fs := runConfig(t, "--max-sources-per-conn", "7", "--max-sources", "9", "--max-receivers-per-conn", "3", "--max-receivers", "11", "--max-sessions", "13")
	def := storegroup.DefaultClientLimits()
	for flag, want := range map[string]int{"max-sources-per-conn": def.MaxSourcesPerConn, "max-sources": def.MaxSources, "max-receivers-per-conn": def.MaxReceiversPerConn, "max-receivers": def.MaxReceivers, "max-sessions": def.MaxSessions} {
		if got := fs.Lookup(flag).DefValue; got != fmt.Sprint(want) {
			t.Fatalf("--%s defaults to %s, want the store's %d", flag, got, want)
		}
	}
	if l := cfg.ClientLimits; l.MaxSourcesPerConn != 7 || l.MaxSources != 9 || l.MaxReceiversPerConn != 3 || l.MaxReceivers != 11 || l.MaxSessions != 13 {
		t.Fatalf("client limits %+v", l)
	}
	if cfg.PolicyDigest != placement.DefaultPolicy().Digest() {
		t.Fatal("the client limit flags changed the policy's digest: they are no part of it")
	}
}

// The flags' values are checked before any store starts; each refusal
// names its flag.
func TestStoreFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // empty: accepted
	}{
		{nil, ""},
		{[]string{"--snapshot-interval", "1ms"}, "--snapshot-interval 1ms is too short"},
		{[]string{"--snapshot-threshold", "0"}, "--snapshot-threshold must be at least 1"},
		{[]string{"--log-store", "x"}, `--log-store "x"`},
		{[]string{"--lock", "nfs"}, `--lock: unknown lock mode "nfs"`},
		{[]string{"--retention-max-age", "-1s"}, "--retention-max-age -1s: must not be negative"},
		{[]string{"--receiver-activity-timeout", "0s"}, "--receiver-activity-timeout 0s: must be positive"},
		{[]string{"--receiver-state-lifetime", "-1m"}, "--receiver-state-lifetime -1m0s: must not be negative"},
		{[]string{"--receiver-state-lifetime", "0s", "--trailing-logs", "0", "--retention-max-bytes", "0"}, ""},
		{[]string{"--repository-commit-interval", "-1ms"}, "--repository-commit-interval -1ms: must be 0..1s"},
		{[]string{"--repository-commit-interval", "2s"}, "--repository-commit-interval 2s: must be 0..1s"},
		{[]string{"--repository-commit-interval", "0s"}, ""},
		{[]string{"--follower-commit-interval", "-1ms"}, "--follower-commit-interval -1ms: must be 0..1s"},
		{[]string{"--follower-commit-interval", "2s"}, "--follower-commit-interval 2s: must be 0..1s"},
		{[]string{"--follower-commit-interval", "0s"}, ""},
		{[]string{"--max-sources-per-conn", "-1"}, "--max-sources-per-conn -1: must not be negative"},
		{[]string{"--max-sources", "-5"}, "--max-sources -5: must not be negative"},
		{[]string{"--max-receivers-per-conn", "-1"}, "--max-receivers-per-conn -1: must not be negative"},
		{[]string{"--max-receivers", "-1"}, "--max-receivers -1: must not be negative"},
		{[]string{"--max-sessions", "-1"}, "--max-sessions -1: must not be negative"},
		{[]string{"--max-sources-per-conn", "0", "--max-sources", "10", "--max-receivers-per-conn", "3"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			flags := defaultStoreFlags()
			flags.bind(fs, true)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := flags.Validate()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
