package storegroup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/storegroup"
)

// A store whose disk fills up stops itself with a message naming the cause
// and the store, skips nothing and damages nothing; once there is room
// again it starts, catches up, and holds what its group holds.
func TestDiskFullStoreStopsAndRecovers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as the full disk")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt).CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a tmpfs for the disk-full test: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })

	victim := "G1S3"
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		if cfg.Name == victim {
			cfg.DataDir = filepath.Join(mnt, victim)
		}
	})
	// 1 KiB messages until the victim's 6 MB disk is full.
	var err error
	c.Eventually(90*time.Second, victim+" stops itself on a full disk", func() bool {
		publishSized(t, c, "full", 500, 1024)
		if s := c.Store(victim); s != nil {
			err = s.Err()
		}
		return err != nil
	})
	msg := err.Error()
	if !strings.Contains(msg, victim) || !strings.Contains(msg, "no space left on device") {
		t.Fatalf("the store's error names neither itself nor the cause: %v", err)
	}
	t.Logf("%s stopped: %v", victim, err)
	// The group goes on with its two other members.
	want := publishSized(t, c, "full", 200, 1024)
	c.Kill(victim)

	// Make room and start again: nothing was damaged, it catches up.
	if out, err := exec.Command("mount", "-o", "remount,size=256m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v: %s", err, out)
	}
	s := c.StartStore(victim)
	if backups, _ := storegroup.ListBackups(c.Config(victim).DataDir); len(backups) != 0 {
		t.Fatalf("the full disk damaged the store's files: they were moved to %v", backups)
	}
	// want is what the publisher had acknowledged: a leader's repository
	// may show it a commit interval later (its raft log holds it already).
	c.Eventually(60*time.Second, victim+" catches up after the disk has room", func() bool {
		return s.Err() == nil && highSeq(t, s, "full") == want
	})
	sameDigests(t, c)
}

// publishSized publishes n messages of size bytes on source, waits until
// they are stable, and returns the last one's sequence number.
func publishSized(t *testing.T, c *clustertest.Cluster, source string, n, size int) uint64 {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.MaxBatch = source, c.Addrs(), 50
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		payload := []byte(fmt.Sprintf("%s-%d-", source, p.FirstSeq()+uint64(i)) + strings.Repeat("x", size))
		if _, err := p.Send(ctx, payload[:size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return p.FirstSeq() + uint64(n) - 1
}
