package storegroup_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"umstore/internal/clustertest"
	"umstore/storegroup"
)

// damageFirstRun opens a stopped store's repo.db and makes the oldest
// message run of source undecodable (an unknown run kind), leaving bbolt's
// pages and meta intact: the file opens, and only a read of that run finds
// the damage.
func damageFirstRun(t *testing.T, dir, source string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "repo.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		src := tx.Bucket([]byte("sources")).Bucket([]byte(source))
		if src == nil {
			return errors.New("no such source")
		}
		msgs := src.Bucket([]byte("msgs"))
		k, v := msgs.Cursor().First()
		if k == nil {
			return errors.New("no message run")
		}
		bad := append([]byte{0, 0x7f}, v[min(2, len(v)):]...)
		return msgs.Put(append([]byte(nil), k...), bad)
	})
	if err != nil {
		t.Fatalf("damage the first message run of %q in %s: %v", source, dir, err)
	}
}

// A follower's repo.db damaged inside its oldest message run opens
// cleanly (bbolt's pages are whole) and fails only when the FSM applies
// the retention release that reads that run: the store stops itself,
// alone, and marks its files damaged, so that its next start moves them
// to a backup and rejoins empty. Without the mark, every start replayed
// into the same damage and stopped again: the store never came back
// without an operator (found by the chaos suite's corrupt-store).
func TestDamageFoundAtApplyRejoinsAtTheNextStart(t *testing.T) {
	t.Parallel()
	logs := newLogBuffer(t)
	c := clustertest.New(t, clustertest.Options{
		Groups: 2,
		Tune: func(cfg *storegroup.Config) {
			smallSnapshots(cfg)
			cfg.RetentionMaxBytes, cfg.RetentionMaxMessages = 0, 600
			cfg.RetentionInterval = 100 * time.Millisecond
		},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	publishEntries(t, c, "run", 500, 100, 10)
	leader := c.WaitLeader(1, 10*time.Second)
	victim := otherMembers(c, 1, leader.Name())[0]
	c.WaitHeld(victim, "run", 500, 10*time.Second)
	c.Stop(victim)
	damageFirstRun(t, c.DataDir(victim), "run")

	s := c.StartStore(victim)
	publishEntries(t, c, "run", 300, 100, 10) // 800 messages: the oldest 200 are released
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s released a damaged message run and kept running", victim)
	}
	if err := s.Err(); !errors.Is(err, storegroup.ErrFilesMarkedDamaged) || !strings.Contains(err.Error(), "moves its files to a numbered backup") {
		t.Fatalf("%s stopped with %v; want the advice for damaged files", victim, err)
	}
	for _, m := range append(c.Members(1), c.Members(2)...) {
		if o := c.Store(m.Name); m.Name != victim && (o == nil || o.Err() != nil) {
			t.Fatalf("%s stopped too", m.Name)
		}
	}

	c.Kill(victim) // forget the stopped instance
	s = c.StartStore(victim)
	if backups, _ := storegroup.ListBackups(c.DataDir(victim)); len(backups) != 1 {
		t.Fatalf("backups after restarting %s: %v; want one", victim, backups)
	}
	if len(logs.lines("damaged", victim, "repo.db")) == 0 {
		t.Fatalf("no log line says %s's repo.db is damaged", victim)
	}
	want := highSeq(t, leader, "run")
	c.Eventually(60*time.Second, victim+" rejoins and catches up", func() bool {
		return s.Err() == nil && !s.Status().CatchingUp && highSeq(t, s, "run") == want
	})
	if err := c.EnsureSame(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
