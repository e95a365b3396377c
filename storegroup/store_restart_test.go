package storegroup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/repository"
	"umstore/storegroup"
)

// smallSnapshots makes raft snapshot and compact its log often.
func smallSnapshots(cfg *storegroup.Config) {
	cfg.SnapshotThreshold = 32
	cfg.SnapshotInterval = 200 * time.Millisecond
	cfg.TrailingLogs = 8
	cfg.MaxAppendEntries = 16
}

// publishRange publishes messages first..last of source to group 1, in
// batches of `batch` messages (one raft entry each), and waits for stability.
func publishRange(t *testing.T, c *clustertest.Cluster, source string, count, batch int) {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source = source
	cfg.Groups = c.Addrs()
	cfg.MaxBatch = batch
	cfg.FlightSize = batch // one entry in flight at a time: many raft entries
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var last uint64
	for i := 0; i < count; i++ {
		seq, err := p.Send(ctx, []byte(fmt.Sprintf("%s-%d", source, i)))
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// An acknowledgement does not wait for the leader's repository to
	// commit the entry: wait for that too, so callers read what they sent.
	c.Eventually(10*time.Second, "the leaders' repositories hold what was published", func() bool {
		for g := range c.Addrs() {
			l := c.Leader(g + 1)
			if l == nil {
				continue // a group without a quorum acknowledged nothing
			}
			if info, ok, err := l.Repository().Source(source); err != nil || !ok || info.HighSeq < last {
				return false
			}
		}
		return true
	})
}

// sameDigests waits until every running member of group 1 has the same
// repository contents.
func sameDigests(t *testing.T, c *clustertest.Cluster) string {
	t.Helper()
	var want string
	c.Eventually(30*time.Second, "every member holds the same repository", func() bool {
		want = ""
		for _, m := range c.Members(1) {
			s := c.Store(m.Name)
			if s == nil {
				return false
			}
			d, err := s.Repository().Digest()
			if err != nil {
				return false
			}
			if want == "" {
				want = d
			} else if d != want {
				return false
			}
		}
		return true
	})
	return want
}

// A follower that was down while the leader compacted its log is brought
// back by InstallSnapshot (FSM.Restore) and ends with the same repository.
func TestLaggingFollowerCatchesUpBySnapshot(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, smallSnapshots)
	leader := c.WaitLeader(1, 30*time.Second)
	follower := otherMembers(c, 1, leader.Name())[0]
	c.Kill(follower)
	publishRange(t, c, "snap", 2000, 10) // ~200 entries, far past TrailingLogs
	leader = c.WaitLeader(1, 10*time.Second)
	c.Eventually(10*time.Second, "the leader compacts its log", func() bool {
		return leader.Status().SnapshotIndex > 100
	})
	c.StartStore(follower)
	sameDigests(t, c)
	if got := c.Store(follower).Repository().AppliedIndex(); got < 200 {
		t.Fatalf("follower applied index %d after catching up, want at least 200", got)
	}
}

// A wiped member of a group whose log was compacted gets the leader's
// repository as it is when the snapshot is sent (own snapshots only refer
// to the repository file), then the log after it, and ends equal.
func TestWipedFollowerCatchesUpFromACompactedLog(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, smallSnapshots)
	leader := c.WaitLeader(1, 30*time.Second)
	follower := otherMembers(c, 1, leader.Name())[0]
	publishRange(t, c, "w", 1000, 10)
	c.Kill(follower)
	c.Wipe(follower)
	publishRange(t, c, "w", 1000, 10)
	leader = c.WaitLeader(1, 10*time.Second)
	c.Eventually(10*time.Second, "the leader compacts its log", func() bool {
		return leader.Status().SnapshotIndex > 150
	})
	snaps, err := filepath.Glob(filepath.Join(c.DataDir(leader.Name()), "snapshots", "*", "state.bin"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("leader's snapshots: %v %v", snaps, err)
	}
	for _, p := range snaps {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 64 {
			t.Fatalf("leader's own snapshot %s: %v, %d bytes; want a reference of a few bytes", p, err, fi.Size())
		}
	}
	c.StartStore(follower)
	sameDigests(t, c)
	if info, ok, _ := c.Store(follower).Repository().Source("w"); !ok || info.HighSeq != 2000 || info.Count != 2000 {
		t.Fatalf("wiped follower after catching up: %+v", info)
	}
}

// Restarting every store after snapshots were taken keeps everything, does
// not re-apply (NoSnapshotRestoreOnStart), and the group serves on.
func TestRestartAfterSnapshotsKeepsState(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, smallSnapshots)
	publishRange(t, c, "r", 1000, 10)
	// The publisher's goodbye frees the source through the log, a moment
	// after it closed: the contents compared must include it.
	c.Eventually(10*time.Second, "the group recorded the publisher's goodbye", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, ok, _ := l.Repository().Source("r")
		return ok && info.Session == ""
	})
	// So must the group's format level, which its leader raises through
	// the log a moment after it learns its members' binaries (levels.go):
	// the digest covers it.
	c.Eventually(10*time.Second, "the group's level is raised", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		level, err := l.Repository().ActiveLevel()
		return err == nil && level == repository.FormatLevel
	})
	before := sameDigests(t, c)
	applied := map[string]uint64{}
	for _, m := range c.Members(1) {
		s := c.Store(m.Name)
		c.Stop(m.Name)
		// Read once stopped: the members still running apply what the
		// first stop brings (a new leader's entry).
		applied[m.Name] = s.Repository().AppliedIndex()
	}
	for _, m := range c.Members(1) {
		s := c.StartStore(m.Name)
		if got := s.Repository().AppliedIndex(); got != applied[m.Name] {
			t.Fatalf("%s: applied index %d after reopening, was %d", m.Name, got, applied[m.Name])
		}
	}
	c.WaitLeader(1, 30*time.Second)
	if after := sameDigests(t, c); after != before {
		t.Fatal("repository contents changed across a restart")
	}
	publishRange(t, c, "r", 10, 10) // resumes at 1001
	s, ok, err := c.WaitLeader(1, 10*time.Second).Repository().Source("r")
	if err != nil || !ok || s.HighSeq != 1010 || s.Count != 1010 {
		t.Fatalf("after restart and 10 more: %+v, %v, %v; want 1010 messages", s, ok, err)
	}
}

// A store whose repository cannot commit stops itself and never skips the
// entry: after a restart it replays and matches its group (SPEC §4 rule 6).
func TestStoreStopsRatherThanDiverge(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	victim := otherMembers(c, 1, leader.Name())[0]
	publishRange(t, c, "d", 100, 10)
	sameDigests(t, c)
	vs := c.Store(victim)
	// Pull the file out from under the FSM: its next transaction fails.
	if err := vs.Repository().Close(); err != nil {
		t.Fatal(err)
	}
	// Read once the file is closed: an entry (a leader's own proposal)
	// may still have been applied a moment before.
	appliedBefore := vs.Repository().AppliedIndex()
	publishRange(t, c, "d", 100, 10) // the other two members keep the group going
	c.Eventually(10*time.Second, "the victim stops itself", func() bool { return vs.Err() != nil })
	if st := vs.Status(); st.State != "failed" || st.Error == "" {
		t.Fatalf("victim status %+v, want failed with a reason", st)
	}
	c.Kill(victim) // forget the stopped instance
	reopened := c.StartStore(victim)
	if got := reopened.Repository().AppliedIndex(); got != appliedBefore {
		t.Fatalf("applied index after the failure is %d, want it unchanged at %d", got, appliedBefore)
	}
	sameDigests(t, c)
}
