package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/testmain"
	"umstore/internal/testports"
	"umstore/placement"
	"umstore/repository"
)

// Restarting `umstored dev` on its own data directory must work; a
// different base port must be refused with the port to use.
func TestCheckDevDeployment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", 14000), false); err != nil {
		t.Fatalf("no file yet: %v", err)
	}
	if err := placement.Dev("127.0.0.1", 14000).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", 14000), true); err != nil {
		t.Fatalf("same deployment again: %v", err)
	}
	// A dev directory from before member secrets is reused; dev then
	// writes the secret beside it.
	withSecret := placement.Dev("127.0.0.1", 14000)
	withSecret.Security = &placement.Security{MemberSecretFile: "deployment.member-secret"}
	if err := checkDevDeployment(path, withSecret, false); err != nil {
		t.Fatalf("the same deployment with a member secret: %v", err)
	}
	// Once its stores hold state, the directory is bound to its ports.
	writeState(t, filepath.Join(filepath.Dir(path), "B", "G2S3"))
	err := checkDevDeployment(path, placement.Dev("127.0.0.1", 15000), true)
	if err == nil || !strings.Contains(err.Error(), "--base-port 14000") {
		t.Fatalf("another base port: %v, want a refusal naming 14000", err)
	}
}

// A run of `umstored dev` that fails to start (a port in use) leaves its
// deployment file behind, but no store with state: the next run, on other
// ports, must not be refused because of it. Before, it was ("created with
// --base-port N").
func TestFailedDevDoesNotBlockTheRetry(t *testing.T) {
	testmain.Slow(t)
	defer func(d time.Duration) { devLeaderWait = d }(devLeaderWait)
	devLeaderWait = 5 * time.Second // the run fails either way; the test is about what it leaves
	dir := t.TempDir()
	base := freeDevBase(t)
	taken, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+1022)) // G2S2's client port
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out, errOut bytes.Buffer
	if code := cmdDev([]string{"--data-dir", dir, "--base-port", fmt.Sprint(base), "--admin-addr", ""}, &out, &errOut); code != 1 {
		t.Fatalf("dev with a port in use: exit %d\n%s", code, errOut.String())
	}
	path := filepath.Join(dir, "deployment.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the failed run left no deployment file (%v): the case this test is about", err)
	}
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", base+100), true); err != nil {
		t.Fatalf("the retry on other ports is refused: %v", err)
	}
	// Stores with state do bind the directory to its ports.
	writeState(t, filepath.Join(dir, "A", "G1S1"))
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", base+100), true); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--base-port %d", base)) {
		t.Fatalf("a directory with state and another base port: %v", err)
	}
}

// freeDevBase finds a base port whose dev ports are all free.
func freeDevBase(t *testing.T) int {
	t.Helper()
	// Its own layout and the one 100 above it, for the retry.
	return testports.Base(t, []string{"127.0.0.1"}, []int{11, 12, 13, 21, 22, 23, 1011, 1012, 1013, 1021, 1022, 1023, 111, 112, 113, 121, 122, 123, 1111, 1112, 1113, 1121, 1122, 1123})
}

// writeState gives the store directory dir a repository with content.
func writeState(t *testing.T, dir string) {
	t.Helper()
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	r, err := repository.Open(filepath.Join(dir, "repo.db"), repository.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Apply([]repository.Entry{{Index: 1, Term: 1, Data: repository.EncodeInitGroup(repository.InitGroup{GroupID: "g", Index: 1})}}); err != nil {
		t.Fatal(err)
	}
}
