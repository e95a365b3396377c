package storegroup_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/internal/testmain"
	"umstore/publisher"
	"umstore/receiver"
	"umstore/storegroup"
	"umstore/wire"
)

// logBuffer collects every store's logs (and copies them to t.Log) so that
// a test can check what an operator would read.
type logBuffer struct {
	t    *testing.T
	mu   sync.Mutex
	buf  bytes.Buffer
	done atomic.Bool
}

func newLogBuffer(t *testing.T) *logBuffer {
	b := &logBuffer{t: t}
	t.Cleanup(func() { b.done.Store(true) })
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	if !b.done.Load() {
		b.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// lines returns the logged lines that contain every one of words.
func (b *logBuffer) lines(words ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		ok := l != ""
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// host starts two groups of three stores in this process, as the stores
// of one host share a process, with small snapshots so that the raft logs
// are compacted, and logs collected in the returned buffer.
func host(t *testing.T, logStore ...string) (*clustertest.Cluster, *logBuffer) {
	logs := newLogBuffer(t)
	c := clustertest.New(t, clustertest.Options{
		Groups: 2,
		Tune: func(cfg *storegroup.Config) {
			smallSnapshots(cfg)
			if len(logStore) > 0 {
				cfg.LogStore = logStore[0]
			}
		},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	return c, logs
}

// livePublisher publishes to every group of c until stopped, as a client
// of the host's other stores would while one store is damaged.
type livePublisher struct {
	t      *testing.T
	p      *publisher.Publisher
	cancel context.CancelFunc
	done   chan struct{}
	last   atomic.Uint64
	err    error
}

func startLivePublisher(t *testing.T, c *clustertest.Cluster, source string) *livePublisher {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.MaxBatch = source, c.Addrs(), 20
	ctx, cancel := context.WithCancel(context.Background())
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	lp := &livePublisher{t: t, p: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(lp.done)
		pace := time.NewTicker(time.Millisecond) // a steady trickle, not a flood
		defer pace.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			seq, err := p.Send(ctx, []byte(fmt.Sprintf("%s-%d", source, i)))
			if err != nil {
				if ctx.Err() == nil {
					lp.err = err
				}
				return
			}
			lp.last.Store(seq)
			select {
			case <-pace.C:
			case <-ctx.Done():
			}
		}
	}()
	t.Cleanup(func() { lp.cancel(); <-lp.done; p.Close() })
	return lp
}

// waitFor waits until the publisher has sent n more messages than it had,
// proof that the groups keep acknowledging.
func (lp *livePublisher) waitFor(c *clustertest.Cluster, n uint64) {
	lp.t.Helper()
	from := lp.last.Load()
	c.Eventually(30*time.Second, fmt.Sprintf("the publisher sends %d more messages", n), func() bool {
		return lp.last.Load() >= from+n || lp.err != nil
	})
	if lp.err != nil {
		lp.t.Fatalf("the publisher failed: %v", lp.err)
	}
}

// stop stops sending, waits until every group confirmed everything sent,
// and returns the last sequence number.
func (lp *livePublisher) stop() uint64 {
	lp.t.Helper()
	lp.cancel()
	<-lp.done
	if lp.err != nil {
		lp.t.Fatalf("the publisher failed: %v", lp.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := lp.p.WaitAllGroups(ctx); err != nil {
		lp.t.Fatalf("not every group confirmed what was published: %v", err)
	}
	return lp.last.Load()
}

// readBack reads source 1..last from each group alone and fails the test
// unless every group returns every message. An Ack comes a moment before the
// leader's repository holds the message: it polls until then.
func readBack(t *testing.T, c *clustertest.Cluster, source string, last uint64) {
	t.Helper()
	for g := 1; g <= len(c.Addrs()); g++ {
		c.Eventually(30*time.Second, fmt.Sprintf("group %d serves %s 1..%d", g, source, last), func() bool {
			got, err := readGroup(c, g, source, last)
			return err == nil && got == last
		})
	}
}

// readGroup reads source 1..last from group g alone and returns how far it
// got without a gap.
func readGroup(c *clustertest.Cluster, g int, source string, last uint64) (uint64, error) {
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group = source, c.Addrs(), g
	r, err := receiver.New(cfg)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got uint64
	err = r.Read(ctx, 1, last, func(m receiver.Message) error {
		if m.Seq != got+1 {
			return fmt.Errorf("message %d after %d", m.Seq, got)
		}
		got = m.Seq
		return nil
	})
	return got, err
}

// publishEntries publishes n messages of size bytes on source, batch
// messages to a raft entry (one entry in flight at a time: many entries, so
// that raft compacts its log), and waits until the leaders hold them all.
func publishEntries(t *testing.T, c *clustertest.Cluster, source string, n, size, batch int) {
	t.Helper()
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.MaxBatch, cfg.FlightSize = source, c.Addrs(), batch, batch
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		payload := []byte(fmt.Sprintf("%s-%d-", source, i) + strings.Repeat("x", size))
		if _, err := p.Send(ctx, payload[:size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitAllGroups(ctx); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, "the leaders' repositories hold what was published", func() bool {
		for g := range c.Addrs() {
			if highSeq(t, c.Leader(g+1), source) < uint64(n) {
				return false
			}
		}
		return true
	})
}

// truncateFile cuts a store's file to size bytes, as `truncate -s` does.
func truncateFile(name string, size int64) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() <= size {
			t.Fatalf("%s is only %d bytes: publish more before cutting it to %d", path, fi.Size(), size)
		}
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
}

// logStoreOf is the log store a case damaging file needs: raft.db is
// raft-boltdb's; the rest run on the default.
func logStoreOf(file string) string {
	if file == "raft.db" {
		return storegroup.LogStoreBoltDB
	}
	return storegroup.LogStoreWAL
}

// flipWALMetaCodec flips one bit of the codec number of every segment in
// raft-wal's meta file ('1' becomes '3'), leaving valid JSON that names a
// codec raft-wal does not know.
func flipWALMetaCodec(t *testing.T, dir string) {
	path := filepath.Join(dir, "wal", "wal-meta.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	field := []byte(`"Codec":1`)
	n := 0
	for i := 0; ; n++ {
		j := bytes.Index(data[i:], field)
		if j < 0 {
			break
		}
		i += j + len(field)
		data[i-1] ^= 0x02
	}
	if n == 0 {
		t.Fatalf("no segment's codec in %s", path)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// flipSnapshotIndex flips the lowest bit of the last digit of every
// snapshot's index in its meta.json.
func flipSnapshotIndex(t *testing.T, dir string) {
	metas, err := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshot meta file in %s: %v", dir, err)
	}
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(`"Index":`))
		if i < 0 {
			t.Fatalf("%s holds no index: %s", m, b)
		}
		j := i + len(`"Index":`)
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		b[j-1] ^= 0x01
		if err := os.WriteFile(m, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

func removeSnapshots(t *testing.T, dir string) {
	if err := os.RemoveAll(filepath.Join(dir, "snapshots")); err != nil {
		t.Fatal(err)
	}
}

func garbleSnapshotMeta(t *testing.T, dir string) {
	metas, err := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshot meta file to garble in %s: %v", dir, err)
	}
	for _, m := range metas {
		if err := os.WriteFile(m, []byte("{\"ID\":\"x\",\"Index\":\x00garbage"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// One damaged file of a stopped store: when the store starts again the
// process survives, the store moves its files to a numbered backup, says so
// naming itself and the file, rejoins empty and catches up; the host's other
// stores serve throughout. Each case killed the whole process (bbolt's
// SIGBUS on the truncated mapping, raft's "log not found" panic).
func TestDamagedFileOfAStoppedStore(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	cases := []struct {
		name   string
		file   string // named by the damage message
		damage func(t *testing.T, dir string)
	}{
		{"repo.db truncated", "repo.db", truncateFile("repo.db", 65536)},
		{"raft.db truncated", "raft.db", truncateFile("raft.db", 32<<10)},
		{"snapshots deleted", "snapshots", removeSnapshots},
		{"snapshot meta garbled", "snapshots", garbleSnapshotMeta},
		// Chaos seed 1209, schedule 99: raft-wal believed the flipped codec
		// number and the store's start failed, taking its host down.
		{"wal meta's codec flipped", "wal-meta.db", flipWALMetaCodec},
		// Valid JSON still: raft would have set its applied index to it.
		{"snapshot meta's index flipped", "snapshots", flipSnapshotIndex},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, logs := host(t, logStoreOf(tc.file))
			publishEntries(t, c, "old", 2000, 300, 10)
			leader := c.WaitLeader(1, 10*time.Second)
			victim := otherMembers(c, 1, leader.Name())[0]
			c.Eventually(10*time.Second, victim+" compacts its raft log", func() bool {
				return c.Store(victim).Status().SnapshotIndex > 40
			})
			want := highSeq(t, leader, "old")
			c.Stop(victim)
			tc.damage(t, c.DataDir(victim))

			live := startLivePublisher(t, c, "live")
			live.waitFor(c, 100)
			s := c.StartStore(victim)
			live.waitFor(c, 100)
			backups, err := storegroup.ListBackups(c.DataDir(victim))
			if err != nil || len(backups) != 1 {
				t.Fatalf("backups of %s: %v, %v; want one", victim, backups, err)
			}
			if _, err := os.Stat(filepath.Join(backups[0].Path, "repo.db")); err != nil {
				t.Fatalf("the damaged store's files are not in its backup: %v", err)
			}
			if got := s.Status().LastStop; got != storegroup.StopNew {
				t.Fatalf("last stop after the damaged files were moved away = %q, want %q", got, storegroup.StopNew)
			}
			msgs := logs.lines("damaged", victim, tc.file, backups[0].Path)
			if len(msgs) == 0 {
				t.Fatalf("no log line says that %s's %s is damaged and where its files went", victim, tc.file)
			}
			c.Eventually(60*time.Second, victim+" catches up", func() bool {
				return s.Err() == nil && highSeq(t, s, "old") == want && !s.Status().CatchingUp
			})
			last := live.stop()
			readBack(t, c, "old", want)
			readBack(t, c, "live", last)
			for g := 1; g <= 2; g++ {
				if err := c.EnsureSame(g, 30*time.Second); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// fetchOld asks the store for every old message: the read goes through
// pages of repo.db that a cut file no longer has.
func fetchOld(t *testing.T, c *clustertest.Cluster, victim *storegroup.Store, high uint64) {
	conn, _, err := (&wire.Dialer{Client: "test", Timeout: 5 * time.Second}).Dial(context.Background(), clientAddr(c, victim.Name()))
	if err != nil {
		select {
		case <-victim.Done():
			return // it met the cut first (a background read) and stopped
		case <-time.After(5 * time.Second):
			t.Fatalf("dial %s, which did not stop: %v", victim.Name(), err)
		}
	}
	defer conn.Close()
	_ = conn.NetConn().SetDeadline(time.Now().Add(15 * time.Second))
	if err := conn.Send(&wire.Fetch{ReqID: 1, Source: "old", From: 1, To: high}); err != nil {
		return // stopped under the request
	}
	if m, err := conn.Read(); err == nil {
		if rep, ok := m.(*wire.FetchReply); ok && len(rep.Msgs) > 0 {
			t.Fatalf("a store reading a file cut under it answered %d messages", len(rep.Msgs))
		}
	}
}

// publishMore publishes until the victim has stopped: applying (repo.db) or
// appending (raft.db) goes through pages of a cut file.
func publishMore(t *testing.T, c *clustertest.Cluster, victim *storegroup.Store, _ uint64) {
	for i := 0; i < 20; i++ {
		select {
		case <-victim.Done():
			return
		default:
		}
		publishEntries(t, c, "more", 200*(i+1), 300, 10)
	}
}

// A store whose mapped file is cut while it runs faults on its next access
// to a page past the end: that store alone stops, with an error naming it
// and the file; the process and the host's other stores keep serving.
// Started again, it finds the damage, backs its files up and rejoins. Each
// case killed the whole process: a SIGBUS in a client's read, in raft's FSM
// goroutine, in raft's own goroutines writing the log.
func TestFaultWhileRunningStopsOnlyThatStore(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	cases := []struct {
		name    string
		leader  bool   // the victim leads group 1 (else a follower)
		file    string // cut under the running store
		cut     int64  // to this many bytes
		provoke func(t *testing.T, c *clustertest.Cluster, victim *storegroup.Store, high uint64)
	}{
		// A read of the first 1000 messages' index may stay within 64 KiB of
		// repo.db: this one is cut to its meta and freelist pages.
		{"leader's repo.db, a client reads", true, "repo.db", 16384, fetchOld},
		{"follower's repo.db, the FSM applies", false, "repo.db", 65536, publishMore},
		{"follower's raft.db, raft appends", false, "raft.db", 65536, publishMore},
		{"leader's raft.db, raft appends", true, "raft.db", 65536, publishMore},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, logs := host(t, logStoreOf(tc.file))
			publishEntries(t, c, "old", 2000, 300, 10)
			leader := c.WaitLeader(1, 10*time.Second)
			victim := leader
			if !tc.leader {
				victim = c.Store(otherMembers(c, 1, leader.Name())[0])
			}
			want := highSeq(t, leader, "old")
			path := filepath.Join(c.DataDir(victim.Name()), tc.file)
			truncateFile(tc.file, tc.cut)(t, c.DataDir(victim.Name()))
			tc.provoke(t, c, victim, want)
			select {
			case <-victim.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not stop after a fault in its %s", victim.Name(), tc.file)
			}
			err := victim.Err()
			if err == nil || !strings.Contains(err.Error(), victim.Name()) || !strings.Contains(err.Error(), path) {
				t.Fatalf("the stopped store's error %v names neither the store %s nor the file %s", err, victim.Name(), path)
			}
			for _, m := range append(c.Members(1), c.Members(2)...) {
				if s := c.Store(m.Name); m.Name != victim.Name() && (s == nil || s.Err() != nil) {
					t.Fatalf("%s stopped too", m.Name)
				}
			}
			live := startLivePublisher(t, c, "live")
			live.waitFor(c, 200)

			c.Kill(victim.Name()) // forget the stopped instance
			s := c.StartStore(victim.Name())
			if backups, _ := storegroup.ListBackups(c.DataDir(victim.Name())); len(backups) != 1 {
				t.Fatalf("backups after restarting the faulted store: %v; want one", backups)
			}
			if len(logs.lines("damaged", victim.Name(), tc.file)) == 0 {
				t.Fatalf("no log line says the faulted store's %s is damaged", tc.file)
			}
			c.Eventually(60*time.Second, victim.Name()+" catches up", func() bool {
				return s.Err() == nil && highSeq(t, s, "old") == want && !s.Status().CatchingUp
			})
			last := live.stop()
			readBack(t, c, "old", want)
			readBack(t, c, "live", last)
			for g := 1; g <= 2; g++ {
				if err := c.EnsureSame(g, 30*time.Second); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
