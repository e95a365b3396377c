package main

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"umstore/placement"
	"umstore/storehost"
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
	flags := storehost.DefaultOptions()
	addRetentionFlags(fs, &flags)
	addSnapshotFlags(fs, &flags)
	if err := fs.Parse([]string{"--source-activity-timeout", "5s"}); err != nil {
		t.Fatal(err)
	}
	p := placement.DefaultPolicy()
	p.Retention.MaxMessages = 77 // from the file, not overridden
	opts := storehost.PolicyOptions(p)
	var logs bytes.Buffer
	overridePolicy(fs, flags, &opts, slog.New(slog.NewTextHandler(&logs, nil)))
	if opts.SourceActivityTimeout != 5*time.Second || opts.RetentionMaxMessages != 77 || opts.RetentionMaxBytes != p.Retention.MaxBytes {
		t.Fatalf("options %+v", opts)
	}
	if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "flag=--source-activity-timeout value=5s deployment_file=30s") {
		t.Fatalf("warnings:\n%s", got)
	}
	if opts.Policy().Digest() == p.Digest() {
		t.Fatal("the overridden policy has the file's digest: the group's leader would not notice")
	}
}

// The receiver flags are no part of the policy: run applies them as given
// (they were parsed and then dropped, so `umstored run
// --allow-receiver-paced-persistence` refused every paced publisher).
func TestRunAppliesTheReceiverFlags(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var flags storehost.Options
	addRetentionFlags(fs, &flags)
	if err := fs.Parse([]string{"--allow-receiver-paced-persistence", "--receiver-activity-timeout", "7s", "--receiver-state-lifetime", "1m"}); err != nil {
		t.Fatal(err)
	}
	p := placement.DefaultPolicy()
	opts := storehost.PolicyOptions(p)
	applyReceiverFlags(flags, &opts)
	if !opts.AllowReceiverPacedPersistence || opts.ReceiverActivityTimeout != 7*time.Second || opts.ReceiverStateLifetime != time.Minute {
		t.Fatalf("options %+v", opts)
	}
	if opts.Policy().Digest() != p.Digest() {
		t.Fatal("the receiver flags changed the policy's digest: they are no part of it")
	}
}
