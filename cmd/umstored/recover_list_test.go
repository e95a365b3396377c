package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"umstore/dirlock"
	"umstore/repository"
)

// recover --list says what is true of each store: a lock file left by a
// process that is gone is no lock (the state is shown), a store whose
// directory a live process holds is named running with its holder, the
// reasons are whole (no "…"), and its logs are in the daemon's format.
func TestRecoverListSaysWhy(t *testing.T) {
	path, _ := silentDeployment(t)
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "G1S3") // host B's store of group 1
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	repoPath := filepath.Join(dir, "repo.db")
	r, err := repository.Open(repoPath, repository.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply([]repository.Entry{{Index: 7, Term: 1, Data: repository.EncodeInitGroup(repository.InitGroup{GroupID: "kept", Index: 1})}}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	// A holder that is gone left its description behind.
	stale := `{"id":"gone-1","pid":999999,"host":"elsewhere","since":"2026-01-01T00:00:00Z","mode":"flock"}`
	if err := os.WriteFile(filepath.Join(dir, "LOCK.info"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	list := func(extra ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		args := append([]string{"--deployment", path, "--host", "B", "--data-dir", dataDir, "--group", "1", "--list"}, extra...)
		if code := cmdRecover(args, &out, &errOut); code != 0 {
			t.Fatalf("--list: exit %d\n%s%s", code, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}

	out, errOut := list("--log-level", "info")
	if !strings.Contains(out, " kept ") || strings.Contains(out, "locked") || strings.Contains(out, "running") {
		t.Fatalf("a stale lock file: the list does not show the state as free to read:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") {
			t.Fatalf("a log line not in the daemon's format: %q", line)
		}
	}
	if !strings.Contains(errOut, "level=INFO") {
		t.Fatalf("--log-level info logs nothing of the lock taken for the listing:\n%s", errOut)
	}

	// A live holder: the directory lock and the repository open, as a
	// running store has them.
	l, err := dirlock.Acquire(context.Background(), dir, dirlock.Options{Name: "G1S3"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	r, err = repository.Open(repoPath, repository.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ = list()
	want := fmt.Sprintf("(running: its files are open in pid %d on host ", os.Getpid())
	if !strings.Contains(out, want) || !strings.Contains(out, "stop umstored run on this host to read or replace them)") || strings.Contains(out, "…") {
		t.Fatalf("a running store: the list does not say %q..., whole:\n%s", want, out)
	}
}
