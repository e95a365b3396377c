package storehost

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/publisher"
	"umstore/storegroup"
)

// A host whose disk fills up loses every store at once, each stopping
// itself; its process stays (Serve goes on, for the status page and so
// that a supervisor does not restart it into the same full disk) until it
// is told to stop, and then ends with ErrStoreStopped. Before, Serve took
// every store stopped for `umstored stop` and the daemon exited 1 (the
// chaos suite's disk-full, seed 1: host A's three stores stopped on a full
// disk and its daemon exited by itself).
func TestEveryStoreStoppedOnAFullDiskKeepsTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six stores")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as host B's full disk")
	}
	d := devOnFreePorts(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "B")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a tmpfs for the disk-full test: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })

	// raft-boltdb, not raft-wal: a raft-wal segment is 64 MiB from the
	// start, more than the whole disk.
	base := BaseConfig(placement.DefaultPolicy())
	base.LogStore = storegroup.LogStoreBoltDB
	hs := startAllWith(t, d, dir, base)
	defer hs.Stop()
	var b *Host
	for _, h := range hs {
		if h.Name() == "B" {
			b = h
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := serve(ctx, Hosts{b})

	// Publish until every store of host B has stopped on its full disk
	// (errors are expected once group 2, two of whose stores are on B,
	// has lost them).
	allDone := make(chan struct{})
	go func() {
		for _, s := range b.Stores() {
			<-s.Done()
		}
		close(allDone)
	}()
	pubCtx, pubCancel := context.WithTimeout(ctx, 90*time.Second)
	defer pubCancel()
	go func() {
		cfg := publisher.DefaultConfig()
		cfg.Source, cfg.Groups = "full", cli.DeploymentGroups(d)
		p, err := publisher.New(pubCtx, cfg)
		if err != nil {
			return
		}
		defer p.Close()
		payload := bytes.Repeat([]byte{'x'}, 1024)
		for pubCtx.Err() == nil && !closed(allDone) {
			_, _ = p.Send(pubCtx, payload)
		}
	}()
	select {
	case <-allDone:
	case <-time.After(90 * time.Second):
		t.Fatal("host B's stores did not all stop on a full disk")
	}
	for _, s := range b.Stores() {
		if s.Err() == nil {
			t.Fatalf("%s stopped without an error", s.Name())
		}
	}

	select {
	case err := <-done:
		t.Fatalf("Serve returned once every store had stopped itself (the daemon would exit), though none was asked to stop: %v", err)
	case <-time.After(2 * time.Second): // four of Serve's checks
	}
	cancel() // SIGTERM
	select {
	case err := <-done:
		if !errors.Is(err, ErrStoreStopped) {
			t.Fatalf("Serve = %v, want %v", err, ErrStoreStopped)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}
