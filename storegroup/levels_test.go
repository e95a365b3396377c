package storegroup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"umstore/internal/clustertest"
	"umstore/internal/groupclient"
	"umstore/publisher"
	"umstore/repository"
	"umstore/storegroup"
	"umstore/wire"
)

// oldMember returns a Tune that makes store name run as a binary of
// format level 1 (v0.1.0) while old is set.
func oldMember(name string, old *atomic.Bool) func(*storegroup.Config) {
	return func(cfg *storegroup.Config) {
		cfg.SourceActivityTimeout = time.Second
		if cfg.Name == name && old.Load() {
			storegroup.EmulateLevel(cfg, 1)
		}
	}
}

// levelsOf returns the active level each running store of group 1 applied.
func levelsOf(c *clustertest.Cluster) map[string]int {
	out := map[string]int{}
	for _, m := range c.Members(1) {
		if s := c.Store(m.Name); s != nil {
			out[m.Name] = s.Status().ActiveLevel
		}
	}
	return out
}

func allAt(levels map[string]int, level int) bool {
	for _, l := range levels {
		if l != level {
			return false
		}
	}
	return len(levels) > 0
}

// publishSome publishes n messages of source through the publisher SDK.
func publishSome(t *testing.T, c *clustertest.Cluster, source string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = source, c.Addrs()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("%s-%d", source, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// unpublished is an Unpublished record for source, held by no session.
func unpublished(source string) []byte {
	return repository.EncodeUnpublished(repository.Unpublished{Source: source, From: 1000, To: 1010})
}

// A group with a member of the previous release (level 1) keeps running
// at level 1, writing nothing of level 2; once that member runs the new
// binary the leader raises the level, and every store applies it; taking
// the member back to the old binary does not lower it; the level survives
// a restart of every store and a member rebuilt from nothing.
func TestMixedGroupLevel(t *testing.T) {
	if testing.Short() {
		t.Skip("several restarts of a group (or a 4 MiB backup); skipped with -short")
	}
	t.Parallel()
	var old atomic.Bool
	old.Store(true)
	c := clustertest.Start(t, 1, oldMember("G1S3", &old))
	leadFromNew(t, c, "G1S3")
	publishSome(t, c, "mixed", 20)
	ghost(t, c, "ghost") // registered and left: freed, never held a message

	// Mixed: several rounds of pings, and the level stays at 1.
	c.Eventually(10*time.Second, "the leader says G1S3 holds the level back", func() bool {
		l := c.Leader(1)
		return l != nil && strings.Contains(strings.Join(l.Status().LevelHeldBy, ";"), "G1S3: reads level 1")
	})
	time.Sleep(2 * time.Second) // two more rounds of the leader's pings
	if got := levelsOf(c); !allAt(got, 1) {
		t.Fatalf("levels with a level-1 member: %v, want 1 everywhere", got)
	}
	err := c.WaitLeader(1, 10*time.Second).Propose(unpublished("mixed"))
	if !errors.Is(err, repository.ErrLevelNotActive) || !strings.Contains(err.Error(), "group 1") {
		t.Fatalf("Unpublished in a mixed group: %v, want ErrLevelNotActive naming group 1", err)
	}
	publishSome(t, c, "mixed2", 20)
	if err := c.Store("G1S3").Err(); err != nil {
		t.Fatalf("the level-1 member stopped: %v", err)
	}
	c.Eventually(10*time.Second, "the silent ghost's session is freed", func() bool {
		in, held, _ := c.WaitLeader(1, 10*time.Second).Repository().Source("ghost")
		return held && in.Session == ""
	})
	for _, m := range c.Members(1) {
		if _, held, _ := c.Store(m.Name).Repository().Source("ghost"); !held {
			t.Fatalf("%s forgot an empty source at level 1 (ForgetSource is of level 2)", m.Name)
		}
	}

	// Upgrade G1S3: the level rises on every store.
	old.Store(false)
	c.Stop("G1S3")
	c.StartStore("G1S3")
	c.Eventually(20*time.Second, "every store at level 2", func() bool { return allAt(levelsOf(c), 2) })
	if held := c.WaitLeader(1, 10*time.Second).Status().LevelHeldBy; len(held) != 0 {
		t.Errorf("at level 2 the leader still says %v holds it back", held)
	}
	if err := c.WaitLeader(1, 10*time.Second).Propose(unpublished("mixed")); err != nil {
		t.Fatalf("Unpublished at level 2: %v", err)
	}
	c.Eventually(10*time.Second, "the withheld ForgetSource is written once the level is raised", func() bool {
		for _, m := range c.Members(1) {
			if _, held, _ := c.Store(m.Name).Repository().Source("ghost"); held {
				return false
			}
		}
		return true
	})

	// Back to the old binary after finalization: the level stays.
	old.Store(true)
	c.Stop("G1S3")
	c.StartStore("G1S3")
	time.Sleep(2500 * time.Millisecond)
	if got := c.WaitLeader(1, 10*time.Second).Status().ActiveLevel; got != 2 {
		t.Fatalf("a member back on level 1 lowered the leader's level to %d", got)
	}
	old.Store(false)
	c.Stop("G1S3")
	c.StartStore("G1S3")

	// Restart every store, and rebuild one from a snapshot.
	for _, m := range c.Members(1) {
		if err := c.Store(m.Name).SnapshotNow(); err != nil && !strings.Contains(err.Error(), "nothing new") {
			t.Fatalf("snapshot %s: %v", m.Name, err)
		}
		c.Stop(m.Name)
	}
	c.Wipe("G1S2")
	for _, m := range c.Members(1) {
		c.StartStore(m.Name)
	}
	c.Eventually(30*time.Second, "every store, the rebuilt one too, at level 2", func() bool {
		got := levelsOf(c)
		return len(got) == 3 && allAt(got, 2)
	})
}

// leadFromNew moves group 1's leadership away from the store old, if it
// leads (its own proposals are not what a test of the new binary's gate
// is about), and returns the leader.
func leadFromNew(t *testing.T, c *clustertest.Cluster, old string) *storegroup.Store {
	t.Helper()
	leader := c.WaitLeader(1, 10*time.Second)
	if leader.Status().Name != old {
		return leader
	}
	for _, m := range c.Members(1) {
		if m.Name != old && leader.TransferLeadership(m) == nil {
			break
		}
	}
	c.Eventually(10*time.Second, "a new binary leads", func() bool {
		l := c.Leader(1)
		return l != nil && l.Status().Name != old
	})
	return c.Leader(1)
}

// ghost registers source with a session that then goes silent: the
// leader frees it after the activity timeout, and, the source holding
// nothing, asks the group to forget it (ForgetSource).
func ghost(t *testing.T, c *clustertest.Cluster, source string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gc := groupclient.New(1, c.Addrs()[0], &wire.Dialer{Client: "careless client"})
	defer gc.Close()
	if _, err := gc.Call(ctx, &wire.Register{Source: source, Session: "gone"}); err != nil {
		t.Fatal(err)
	}
}

// keyedPublish is a PublishKeyed entry (type 16): level 2, and not
// ignorable, so a binary of level 1 stops on it.
func keyedPublish(t *testing.T, source string) []byte {
	t.Helper()
	body, err := msgpack.Marshal(map[string]any{"src": source, "seq": uint64(1), "msgs": [][]byte{[]byte("keyed")}})
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{byte(repository.CmdPublishKeyed)}, body...)
}

// The gate is what keeps a member of the previous release running: the
// same entry of a newer type is refused by the gate, and the level-1
// member keeps applying; with the gate taken away it is written, and the
// level-1 member stops on it.
func TestUngatedTypeStopsOldMember(t *testing.T) {
	t.Parallel()
	var old atomic.Bool
	old.Store(true)
	c := clustertest.Start(t, 1, oldMember("G1S3", &old))
	leader := leadFromNew(t, c, "G1S3")
	publishSome(t, c, "k", 5)

	err := leader.Propose(keyedPublish(t, "k2"))
	if !errors.Is(err, repository.ErrLevelNotActive) {
		t.Fatalf("gated PublishKeyed: %v, want ErrLevelNotActive", err)
	}
	publishSome(t, c, "k", 5)
	target := leader.Repository().AppliedIndex()
	c.Eventually(10*time.Second, "the level-1 member applies past the refused entry", func() bool {
		return c.Store("G1S3").Repository().AppliedIndex() >= target
	})
	if err := c.Store("G1S3").Err(); err != nil {
		t.Fatalf("behind the gate the level-1 member stopped: %v", err)
	}

	leader.Ungate()
	if err := leader.Propose(keyedPublish(t, "k2")); err != nil {
		t.Fatalf("ungated PublishKeyed: %v", err)
	}
	c.Eventually(10*time.Second, "the level-1 member stops on the ungated entry", func() bool {
		err := c.Store("G1S3").Err()
		return err != nil && strings.Contains(err.Error(), repository.ErrUnknownCommand.Error())
	})
	t.Logf("the level-1 member stopped: %v", c.Store("G1S3").Err())
}
