package storegroup_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/repository"
	"umstore/storegroup"
)

// A store whose data directory holds raft.db keeps raft-boltdb whatever
// the setting, and keeps its messages; a new store takes the setting.
func TestStoreKeepsItsLogStore(t *testing.T) {
	t.Parallel()
	kind := storegroup.LogStoreBoltDB
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) { cfg.LogStore = kind }})
	publishEntries(t, c, "old", 300, 100, 10)
	leader := c.WaitLeader(1, 10*time.Second)
	want := highSeq(t, leader, "old")
	victim := otherMembers(c, 1, leader.Name())[0]
	c.Stop(victim)
	kind = storegroup.LogStoreWAL // the next start asks for raft-wal
	s := c.StartStore(victim)
	if _, _, got, err := s.LogBounds(); err != nil || got != storegroup.LogStoreBoltDB {
		t.Fatalf("the restarted store uses %q (%v), want the raft.db it has", got, err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(victim), "wal")); err == nil {
		t.Fatal("a store with raft.db created a raft-wal log beside it")
	}
	c.Eventually(30*time.Second, victim+" holds everything", func() bool { return highSeq(t, s, "old") == want })
	c.Stop(victim)
	c.Wipe(victim)
	s = c.StartStore(victim)
	if _, _, got, _ := s.LogBounds(); got != storegroup.LogStoreWAL {
		t.Fatalf("a wiped store uses %q, want the setting, wal", got)
	}
	c.Eventually(60*time.Second, victim+" catches up on raft-wal", func() bool {
		return s.Err() == nil && highSeq(t, s, "old") == want && !s.Status().CatchingUp
	})
	if err := c.EnsureSame(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// With the repository indexing the log, compaction keeps every entry a
// retained message refers to, however small the snapshot settings; once
// retention releases the oldest messages the log is compacted past them.
// Every message stays readable from every member, one restarted among
// them (its references point into its own log).
func TestRetentionHoldsTheLog(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) {
		smallSnapshots(cfg)
		cfg.RetentionMaxBytes = 0
		cfg.RetentionMaxMessages = 1000
		cfg.RetentionInterval = 100 * time.Millisecond
	}})
	publishEntries(t, c, "kept", 600, 100, 10) // 60 entries, under the limit
	leader := c.WaitLeader(1, 10*time.Second)
	// A snapshot past the first message's entry plus the trailing entries
	// would have compacted it away, were it not held.
	c.Eventually(10*time.Second, "a snapshot is taken past the oldest message's entry", func() bool {
		low, _, err := leader.Repository().LogRefRange()
		return err == nil && low > 0 && leader.Status().SnapshotIndex > low+8
	})
	// A follower commits its repository every FollowerCommitInterval: its
	// messages' references show once it has.
	c.Eventually(10*time.Second, "every member committed its messages", func() bool {
		for _, m := range c.Members(1) {
			if low, _, err := c.Store(m.Name).Repository().LogRefRange(); err != nil || low == 0 {
				return false
			}
		}
		return true
	})
	var oldest uint64 // the entry of message 1
	for _, m := range c.Members(1) {
		s := c.Store(m.Name)
		first, _, _, err := s.LogBounds()
		low, _, rerr := s.Repository().LogRefRange()
		if err != nil || rerr != nil || low == 0 || first > low {
			t.Fatalf("%s compacted its log to %d (%v, %v) while its messages refer to %d", m.Name, first, err, rerr, low)
		}
		oldest = low
	}
	victim := otherMembers(c, 1, leader.Name())[0]
	c.Stop(victim)
	s := c.StartStore(victim)
	c.Eventually(30*time.Second, victim+" serves everything after a restart", func() bool {
		msgs, err := s.Repository().Read("kept", 1, 600, 0, 0)
		return err == nil && len(msgs) == 600
	})
	publishEntries(t, c, "kept", 900, 100, 10) // up to 1500: the limit releases the oldest
	c.Eventually(30*time.Second, "retention releases the oldest messages", func() bool {
		info, _, _ := leader.Repository().Source("kept")
		return info.TrimmedThrough == 500
	})
	// Compaction follows at the next snapshot, which raft takes once
	// SnapshotThreshold entries follow the last one: publish that many
	// more (another source, under the limit), so one is taken after the
	// release whenever the release landed.
	publishEntries(t, c, "more", 400, 100, 10)
	c.Eventually(30*time.Second, "compaction follows the release", func() bool {
		first, _, _, _ := leader.LogBounds()
		low, _, _ := leader.Repository().LogRefRange()
		return first > oldest && first <= low
	})
	c.Eventually(30*time.Second, "the retained messages read back", func() bool {
		msgs, err := leader.Repository().Read("kept", 0, 1500, 0, 0)
		return err == nil && len(msgs) == 1000 && msgs[999].Seq == 1500
	})
	// A wiped member can no longer catch up from the log, which starts
	// after what was released: the leader streams it a snapshot, the
	// retained messages inline, and the member's log starts afresh.
	c.Stop(victim)
	c.Wipe(victim)
	s = c.StartStore(victim)
	c.Eventually(60*time.Second, victim+" catches up from a snapshot", func() bool {
		msgs, err := s.Repository().Read("kept", 0, 1500, 0, 0)
		return s.Err() == nil && !s.Status().CatchingUp && err == nil && len(msgs) == 1000
	})
	if low, _, _ := s.Repository().LogRefRange(); low != 0 {
		first, _, _, _ := s.LogBounds()
		if first > low {
			t.Fatalf("%s refers to log entry %d, its log starts at %d", victim, low, first)
		}
	}
	if err := c.EnsureSame(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// walSegments lists a store's raft-wal segment files, oldest first.
func walSegments(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no raft-wal segment in %s: %v", dir, err)
	}
	sort.Strings(segs)
	return segs
}

// A bit flipped in a payload in a stopped store's raft-wal segment, inside
// an entry its repository refers to, is detected when the store reads it:
// Read never returns it, and a client fetching it gets no damaged payload.
func TestBitFlippedInTheLogIsNotServed(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1})
	publishEntries(t, c, "flip", 200, 100, 10)
	leader := c.WaitLeader(1, 10*time.Second)
	victim := otherMembers(c, 1, leader.Name())[0]
	c.WaitHeld(victim, "flip", 200, 10*time.Second)
	c.Stop(victim)
	// Message 5 ("flip-4-xxx..."), in the first entry, far from the tail
	// batch that raft-wal checks at open.
	seg := walSegments(t, c.DataDir(victim))[0]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte("flip-4-xxxx"))
	if at < 0 {
		t.Fatal("payload not found in the segment")
	}
	data[at+8] ^= 0x01
	if err := os.WriteFile(seg, data, 0o640); err != nil {
		t.Fatal(err)
	}
	s := c.StartStore(victim)
	c.Eventually(10*time.Second, victim+" opens", func() bool { return s.Repository() != nil && s.Repository().AppliedIndex() > 0 })
	msgs, err := s.Repository().Read("flip", 1, 200, 0, 0)
	var ce *repository.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 5 || len(msgs) != 4 {
		t.Fatalf("Read of the damaged log: %d messages, %v; want 4 and a CorruptError for message 5", len(msgs), err)
	}
	for _, m := range msgs {
		if m.CRC != repository.Checksum(m.Payload) {
			t.Fatalf("message %d served damaged", m.Seq)
		}
	}
	if s.Repository().CorruptCount() == 0 {
		t.Error("the damaged message was not counted")
	}
}

// A torn tail (a store killed in the middle of writing its log, the last
// batch cut short) is cut by raft-wal when the log opens; the store then
// catches up what it lost from its group, and nothing acknowledged is
// lost. If its repository had already indexed entries of the lost tail,
// the refs check finds it and the store rejoins empty.
func TestTornTailIsCut(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1})
	publishEntries(t, c, "torn", 400, 100, 10)
	leader := c.WaitLeader(1, 10*time.Second)
	victim := otherMembers(c, 1, leader.Name())[0]
	c.WaitHeld(victim, "torn", 400, 10*time.Second)
	c.Kill(victim)
	segs := walSegments(t, c.DataDir(victim))
	tail := segs[len(segs)-1]
	data, err := os.ReadFile(tail)
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.LastIndex(data, []byte("torn-399-"))
	if end < 0 {
		t.Fatal("last payload not found in the tail segment")
	}
	if err := os.Truncate(tail, int64(end+20)); err != nil { // in the middle of the last entry
		t.Fatal(err)
	}
	s := c.StartStore(victim)
	c.Eventually(60*time.Second, victim+" catches up after its torn tail", func() bool {
		return s.Err() == nil && highSeq(t, s, "torn") == 400 && !s.Status().CatchingUp
	})
	publishEntries(t, c, "torn", 100, 100, 10)
	readBack(t, c, "torn", 500)
	if err := c.EnsureSame(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A data directory holding both raft logs is refused, not guessed at.
func TestTwoLogStoresAreRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1})
	publishEntries(t, c, "two", 50, 10, 10)
	leader := c.WaitLeader(1, 10*time.Second)
	victim := otherMembers(c, 1, leader.Name())[0]
	c.Stop(victim)
	if err := os.WriteFile(filepath.Join(c.DataDir(victim), "raft.db"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg := c.Config(victim)
	if s, err := storegroup.Open(cfg); err == nil {
		s.Close()
		t.Fatal("a store opened with both raft.db and wal/")
	} else if !strings.Contains(err.Error(), "two raft logs") {
		t.Fatalf("refusal %v does not say why", err)
	}
}
