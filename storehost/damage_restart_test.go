package storehost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/publisher"
	"umstore/storegroup"
)

// publishN sends n messages of 300 bytes of source through the publisher SDK, fewer if
// until is closed first (checked every 100), and waits until they are
// stable. It returns how many it sent.
func publishN(t *testing.T, groups [][]string, source string, n int, until <-chan struct{}) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := 0
	for ; sent < n; sent++ {
		if sent%100 == 0 && closed(until) {
			break
		}
		payload := fmt.Appendf(nil, "message %d of %s ", sent, source)
		payload = append(payload, bytes.Repeat([]byte{'.'}, 300-len(payload))...)
		if _, err := p.Send(ctx, payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return sent
}

// A store whose repo.db is damaged while it runs stops itself, alone, and
// marks its files damaged; its host starts it again by itself: the start
// moves the files to a numbered backup and the store rejoins its group
// empty and catches up. Before, it stayed down until the daemon was
// restarted (the chaos suite, seed 1210, schedule 20: a message run whose
// length bits were flipped opened cleanly and failed when an entry was
// applied to it; here the file is cut under the running store).
func TestStoreDamagedWhileRunningIsStartedAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six stores")
	}
	d := devOnFreePorts(t)
	dir := t.TempDir()
	// Small snapshots: the repository's pages are written (and read) as
	// entries are applied, not only at a far-off snapshot.
	p := placement.DefaultPolicy()
	p.Snapshot = placement.SnapshotPolicy{Threshold: 32, Interval: placement.Duration(200 * time.Millisecond), TrailingLogs: 8}
	hs := startAllWith(t, d, dir, BaseConfig(p))
	ctx, cancel := context.WithCancel(context.Background())
	done := serve(ctx, hs)
	served := false
	defer func() {
		if !served {
			cancel()
			<-done
		}
	}()
	groups := cli.DeploymentGroups(d)
	publishN(t, groups, "old", 2000, nil)

	var victim *storegroup.Store
	var host string
	for _, h := range hs {
		for _, s := range h.Stores() {
			if s.Group() == 1 && s.Status().State == "Follower" && victim == nil {
				victim, host = s, h.Name()
			}
		}
	}
	if victim == nil {
		t.Fatal("group 1 has no follower")
	}
	storeDir := filepath.Join(dir, host, victim.Name())
	if st, err := os.Stat(filepath.Join(storeDir, "repo.db")); err == nil {
		t.Logf("repo.db of %s: %d bytes", victim.Name(), st.Size())
	}
	if err := os.Truncate(filepath.Join(storeDir, "repo.db"), 16384); err != nil {
		t.Fatal(err)
	}
	more := publishN(t, groups, "more", 20000, victim.Done()) // the follower's FSM meets the cut file
	select {
	case <-victim.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop after its repo.db was cut", victim.Name())
	}
	if err := victim.Err(); !errors.Is(err, storegroup.ErrFilesMarkedDamaged) {
		t.Fatalf("%s stopped with %v; want its files marked damaged", victim.Name(), err)
	}

	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		var again *storegroup.Store
		for _, s := range hs.Stores() {
			if s.Name() == victim.Name() && s != victim {
				again = s
			}
		}
		if again != nil && again.Err() == nil {
			st := again.Status()
			last = fmt.Sprintf("state %s, catching up %v, old %d, more %d of %d", st.State, st.CatchingUp, highOf(st, "old"), highOf(st, "more"), more)
			if !st.CatchingUp && st.State == "Follower" && highOf(st, "old") == 2000 && highOf(st, "more") == uint64(more) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not started again and caught up (started again: %v; %s)", victim.Name(), again != nil, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if backups, err := storegroup.ListBackups(storeDir); err != nil || len(backups) != 1 {
		t.Fatalf("backups of %s: %v, %v; want one", victim.Name(), backups, err)
	}
	cancel()
	served = true
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after the store was started again: %v; want nil (every store serves)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// closed reports whether ch is closed (a nil channel never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// highOf is the highest sequence number st holds of source.
func highOf(st storegroup.Status, source string) uint64 {
	for _, s := range st.Sources {
		if s.Name == source {
			return s.HighSeq
		}
	}
	return 0
}
