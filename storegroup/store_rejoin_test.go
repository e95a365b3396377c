package storegroup_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/placement"
	"umstore/storegroup"
)

func otherMembers(c *clustertest.Cluster, group int, not string) []string {
	var out []string
	for _, m := range c.Members(group) {
		if m.Name != not {
			out = append(out, m.Name)
		}
	}
	return out
}

// highSeq is the highest sequence number of source that s's repository
// holds, once what s applied is committed: a leader answers a publish
// before its repository commits it (fsm_commit.go), so a test that reads
// the leader's repository just after publishing waits for that commit,
// or it would take an older figure for what the group holds. The wait is
// bounded: under steady publishing the figure is read as it is.
func highSeq(t *testing.T, s *storegroup.Store, source string) uint64 {
	t.Helper()
	if s == nil {
		return 0
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		// Pending waits for a commit under way.
		if n, _ := s.Repository().Pending(); n == 0 {
			break
		}
	}
	info, ok, err := s.Repository().Source(source)
	if err != nil || !ok {
		return 0
	}
	return info.HighSeq
}

// The first member of a group (the one that bootstraps a new group) comes
// back wiped: it must join and catch up, never bootstrap a second group.
func TestWipedBootstrapperRejoinsInsteadOfBootstrapping(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	publishRange(t, c, "w", 500, 10)
	id := c.GroupID(1, 30*time.Second)
	first := c.Members(1)[0].Name
	c.Kill(first)
	c.Wipe(first)
	s := c.StartStore(first)
	c.Eventually(30*time.Second, first+" catches up", func() bool {
		st := s.Status()
		return !st.CatchingUp && st.GroupID == id && highSeq(t, s, "w") == 500
	})
	if _, err := os.Stat(filepath.Join(c.DataDir(first), "rejoin.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rejoin marker still present after catching up: %v", err)
	}
	sameDigests(t, c)
}

// Every store of group 1 is wiped while group 2 remembers group 1's
// identity: group 1 must refuse to start rather than begin again empty.
func TestWipedGroupIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	// Not just the leader's: until it records the identity, group 2 would
	// "record" an empty one, and group 1 would rightly start again as a new
	// group once wiped.
	id1 := c.GroupID(1, 30*time.Second)
	c.Eventually(30*time.Second, "group 2 records group 1's identity", func() bool {
		for _, m := range c.Members(2) {
			s := c.Store(m.Name)
			peers, err := s.Repository().PeerGroups()
			if err != nil || peers[1] != id1 {
				return false
			}
		}
		return true
	})
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
		c.Wipe(m.Name)
	}
	var stores []*storegroup.Store
	for _, m := range c.Members(1) {
		stores = append(stores, c.StartStore(m.Name))
	}
	for _, s := range stores {
		c.Eventually(30*time.Second, s.Name()+" refuses to start", func() bool { return s.Err() != nil })
		err := s.Err()
		// The refusal matches placement's sentinel (the one definition of
		// the concept), as storegroup's name for it.
		if !errors.Is(err, placement.ErrNoStoreWithState) || !errors.Is(err, storegroup.ErrNoStoreWithState) || !strings.Contains(err.Error(), "cannot recover group 1: no store with state") {
			t.Fatalf("%s: %v; want the cannot-recover refusal", s.Name(), err)
		}
		if s.Repository().GroupID() != "" {
			t.Fatalf("%s bootstrapped a new group %q", s.Name(), s.Repository().GroupID())
		}
	}
}

// The amnesia case of RAFT-NOTES: A and B acknowledged writes while C was
// down; then A and B stop, B is wiped, and C (stale) and B (empty) come back.
// Raft alone lets B's vote elect C, which truncates the writes everywhere.
// B must not help C: with A still away, B waits (it cannot tell how far the
// group had got), and nobody is elected; when A returns, A is.
func TestEmptyStoreNeverElectsAStaleMember(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	a := c.WaitLeader(1, 10*time.Second).Name()
	others := otherMembers(c, 1, a)
	b, stale := others[0], others[1]
	c.Kill(stale)
	publishRange(t, c, "amnesia", 2000, 10) // acknowledged by A and B only
	c.Stop(a)
	c.Stop(b)
	c.Wipe(b)
	c.StartStore(stale)
	bs := c.StartStore(b)

	deadline := time.Now().Add(5 * time.Second) // several election timeouts
	for time.Now().Before(deadline) {
		if l := c.Leader(1); l != nil {
			t.Fatalf("%s was elected while %s (the member with every write) was down", l.Name(), a)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := bs.Status(); st.State != "starting" {
		t.Fatalf("the wiped store started raft without knowing how far its group got: %+v", st)
	}
	c.StartStore(a)
	l := c.WaitLeader(1, 30*time.Second)
	c.Eventually(30*time.Second, "every member holds all 2000 messages", func() bool {
		for _, m := range c.Members(1) {
			if highSeq(t, c.Store(m.Name), "amnesia") != 2000 {
				return false
			}
		}
		return true
	})
	t.Logf("leader after recovery: %s", l.Name())
	sameDigests(t, c)
}

// A wiped store that crashed half-way through catching up still must not
// vote for a member that lacks the entries it was catching up to: the
// rejoin marker keeps its vote gate shut across the restart.
func TestInterruptedCatchUpKeepsTheVoteGateShut(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 10*time.Second)
	a := leader.Name()
	others := otherMembers(c, 1, a)
	b, stale := others[0], others[1]
	c.Kill(stale)
	publishRange(t, c, "gate", 2000, 10)
	st := c.Store(a).Status()
	target := map[string]any{"target": map[string]uint64{"term": st.LastTerm, "index": st.LastIndex}, "from": a}
	c.Stop(a)
	c.Stop(b)
	c.Wipe(b)
	// B joined with A's position as its target and crashed before
	// catching up: its data directory holds only the marker.
	if err := os.MkdirAll(c.DataDir(b), 0o750); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(target)
	if err := os.WriteFile(filepath.Join(c.DataDir(b), "rejoin.json"), raw, 0o640); err != nil {
		t.Fatal(err)
	}
	c.StartStore(stale)
	bs := c.StartStore(b)
	c.Eventually(10*time.Second, b+" runs raft with its vote gate shut", func() bool {
		s := bs.Status()
		return s.State != "starting" && s.CatchingUp
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if l := c.Leader(1); l != nil {
			t.Fatalf("%s was elected with the vote of a store that had not caught up", l.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.StartStore(a)
	c.WaitLeader(1, 30*time.Second)
	c.Eventually(30*time.Second, "every member holds all 2000 messages and "+b+" caught up", func() bool {
		for _, m := range c.Members(1) {
			if highSeq(t, c.Store(m.Name), "gate") != 2000 {
				return false
			}
		}
		return !bs.Status().CatchingUp
	})
}

// An operator accepts the loss of a group whose every store was wiped
// (umstored recover --accept-loss marks its stores): the group starts again
// empty under a new identity, and the other group learns the new identity.
func TestAcceptLossStartsTheGroupAgain(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	old := c.GroupID(1, 30*time.Second)
	c.Eventually(30*time.Second, "group 2 records group 1's identity", func() bool {
		peers, err := c.WaitLeader(2, 10*time.Second).Repository().PeerGroups()
		return err == nil && peers[1] == old
	})
	for _, m := range c.Members(1) {
		c.Kill(m.Name)
		c.Wipe(m.Name)
	}
	first := c.Members(1)[0].Name
	if err := os.MkdirAll(c.DataDir(first), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.DataDir(first), "accept-loss"), []byte("now\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members(1) {
		c.StartStore(m.Name)
	}
	l := c.WaitLeader(1, 30*time.Second)
	c.Eventually(30*time.Second, "group 1 has a new identity on every member and group 2 records it", func() bool {
		id := l.Repository().GroupID()
		if id == "" || id == old {
			return false
		}
		for _, m := range c.Members(1) {
			if s := c.Store(m.Name); s == nil || s.Repository().GroupID() != id {
				return false
			}
		}
		peers, err := c.WaitLeader(2, 10*time.Second).Repository().PeerGroups()
		return err == nil && peers[1] == id
	})
	if _, err := os.Stat(filepath.Join(c.DataDir(first), "accept-loss")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the accept-loss mark outlived its use: %v", err)
	}
}

// A member with state reports how far its log goes from the moment it
// answers, before its raft runs. An empty member chooses its vote gate's
// target from these answers: a restarting member that reported 0 made a
// stale member look the most up-to-date, the empty member voted for it, and
// the group truncated acknowledged writes (TestEmptyStoreNeverElectsAStale
// Member caught it under load).
func TestRestartingMemberReportsItsLogBeforeRaftRuns(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	publishRange(t, c, "pos", 500, 10)
	m := c.Members(1)[1].Name
	want := c.Store(m).Status()
	if want.LastIndex == 0 {
		t.Fatalf("%s reports no log before stopping: %+v", m, want)
	}
	c.Stop(m)
	s := c.StartStore(m)
	starting := 0
	deadline := time.Now().Add(10 * time.Second)
	for st := s.Status(); st.State == "starting" || st.State == ""; st = s.Status() {
		starting++
		if st.HasState && (st.LastIndex < want.LastIndex || st.LastTerm < want.LastTerm) {
			t.Fatalf("%s, starting, reports its log at (term %d, index %d); it holds (term %d, index %d)", m, st.LastTerm, st.LastIndex, want.LastTerm, want.LastIndex)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still starting after 10s", m)
		}
	}
	t.Logf("%d status reads while %s was starting", starting, m)
}
