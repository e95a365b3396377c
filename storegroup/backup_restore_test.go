package storegroup_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/repository"
	"umstore/storegroup"
	"umstore/wire"
)

// askBackup asks the store at addr for a backup and returns the stream
// and its last chunk.
func askBackup(t *testing.T, addr string) ([]byte, *wire.BackupChunk) {
	t.Helper()
	stream, last, _ := askBackupChunks(t, addr)
	return stream, last
}

// askBackupChunks is askBackup, also counting the chunks.
func askBackupChunks(t *testing.T, addr string) ([]byte, *wire.BackupChunk, int) {
	t.Helper()
	d := &wire.Dialer{Client: "backup test", Timeout: 5 * time.Second}
	c, _, err := d.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(&wire.Backup{ReqID: 7}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for chunks := 1; ; chunks++ {
		m, err := c.Read()
		if err != nil {
			t.Fatalf("the backup broke off after %d bytes: %v", buf.Len(), err)
		}
		ch, ok := m.(*wire.BackupChunk)
		if !ok {
			t.Fatalf("the leader answered a Backup with %#v", m)
		}
		buf.Write(ch.Data)
		if ch.Last {
			if int64(buf.Len()) != ch.Size {
				t.Fatalf("the backup has %d bytes, its chunks say %d", buf.Len(), ch.Size)
			}
			return buf.Bytes(), ch, chunks
		}
	}
}

func clientAddrOf(c *clustertest.Cluster, group int, name string) string {
	for _, m := range c.Members(group) {
		if m.Name == name {
			return m.ClientAddr
		}
	}
	return ""
}

func payload(seq uint64) []byte { return []byte(fmt.Sprintf("s #%d", seq)) }

// A backup taken from a group's leader while messages are published is a
// prefix of what the group holds: every message up to the backup's high,
// byte for byte, at the applied index it names, while publishing went on
// past it. Restored into the group's three data directories, the group
// starts with that state under a new identity naming the old one, and
// publishing resumes after the backed-up high.
func TestBackupIsAPrefixAndRestores(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var published atomic.Uint64
	publish := func(n int) {
		t.Helper()
		first := published.Load() + 1
		var batch [][]byte
		for i := range n {
			batch = append(batch, payload(first+uint64(i)))
		}
		if err := c.PublishDirect(ctx, 1, "s", first, batch); err != nil {
			t.Fatal(err)
		}
		published.Add(uint64(n))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	publish(20)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			first := published.Load() + 1
			var batch [][]byte
			for i := range 20 {
				batch = append(batch, payload(first+uint64(i)))
			}
			if err := c.PublishDirect(ctx, 1, "s", first, batch); err != nil {
				return
			}
			published.Add(20)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	oldID := c.GroupID(1, 10*time.Second)
	leader := c.WaitLeader(1, 10*time.Second)
	stream, last := askBackup(t, clientAddrOf(c, 1, leader.Status().Name))
	time.Sleep(200 * time.Millisecond)
	close(stop)
	<-done
	publish(5) // at least one batch after the backup
	if last.GroupID != oldID || last.Group != 1 || last.Index == 0 {
		t.Fatalf("the backup says group %d %s at index %d, want group 1 %s", last.Group, last.GroupID, last.Index, oldID)
	}

	scratch, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	if err := scratch.Restore(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if scratch.AppliedIndex() != last.Index || scratch.GroupID() != oldID {
		t.Fatalf("the stream holds %s at %d, its chunks said %s at %d", scratch.GroupID(), scratch.AppliedIndex(), oldID, last.Index)
	}
	info, ok, err := scratch.Source("s")
	if err != nil || !ok {
		t.Fatalf("the backup holds no source s: %v", err)
	}
	high := info.HighSeq
	if high == 0 || high >= published.Load() || info.LowSeq != 1 || info.Count != high {
		t.Fatalf("the backup holds s %d..%d (%d messages); %d were published by the end: want a whole prefix, short of the end", info.LowSeq, high, info.Count, published.Load())
	}
	got, err := scratch.Read("s", 1, high, int(high)+1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	held, err := leader.Repository().Read("s", 1, high, int(high)+1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for i := range high {
		seq := i + 1
		if got[i].Seq != seq || !bytes.Equal(got[i].Payload, payload(seq)) || !bytes.Equal(held[i].Payload, got[i].Payload) {
			t.Fatalf("message %d of the backup: %d %q, the group holds %q", seq, got[i].Seq, got[i].Payload, held[i].Payload)
		}
	}

	// Restore into the group's own data directories (the old ones moved
	// aside), as umstored restore does on each host.
	names := []string{"G1S1", "G1S2", "G1S3"}
	for _, n := range names {
		c.Stop(n)
	}
	newID := storegroup.RestoredGroupID("backup-1", oldID)
	for _, n := range names {
		if err := os.Rename(c.DataDir(n), c.DataDir(n)+".old"); err != nil {
			t.Fatal(err)
		}
		index, _, err := storegroup.RestoreDataDir(c.DataDir(n), bytes.NewReader(stream), storegroup.Restore{
			GroupID: newID, Members: c.Members(1), SessionsFreedAt: 1})
		if err != nil {
			t.Fatal(err)
		}
		if index != last.Index {
			t.Fatalf("%s restored at index %d, want %d", n, index, last.Index)
		}
	}
	if _, _, err := storegroup.RestoreDataDir(c.DataDir("G1S1"), bytes.NewReader(stream), storegroup.Restore{GroupID: newID, Members: c.Members(1)}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("a second restore into a data directory with state: %v, want a refusal", err)
	}
	for _, n := range names {
		c.StartStore(n)
	}
	restored := c.WaitLeader(1, 20*time.Second)
	if id := restored.Repository().GroupID(); id != newID || storegroup.RestoredFrom(id) != oldID {
		t.Fatalf("the restored group's identity is %q (restored from %q), want %q from %q", id, storegroup.RestoredFrom(id), newID, oldID)
	}
	if info, _, _ := restored.Repository().Source("s"); info.HighSeq != high || info.Session != "" {
		t.Fatalf("the restored group holds s up to %d with session %q, want %d and no session", info.HighSeq, info.Session, high)
	}
	if err := c.PublishDirect(ctx, 1, "s", high+1, [][]byte{payload(high + 1)}); err != nil {
		t.Fatalf("publishing after the backed-up high: %v", err)
	}
	if st := restored.Status(); st.LastTerm <= last.Term+storegroup.RestoredTermStep {
		t.Fatalf("the restored group's last term is %d, want above the backup's %d plus %d", st.LastTerm, last.Term, storegroup.RestoredTermStep)
	}
	if got := restored.Repository().AppliedIndex(); got <= last.Index {
		t.Fatalf("the restored group's applied index %d, want past the backup's %d", got, last.Index)
	}
}

// A restored store whose other members still hold the group it was copied
// from refuses to start: it neither joins them nor is replaced by them.
func TestRestoredStoreRefusesTheGroupItCameFrom(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	oldID := c.GroupID(1, 10*time.Second)
	c.Eventually(10*time.Second, "every member holds the group's identity", func() bool {
		for _, n := range []string{"G1S1", "G1S2", "G1S3"} {
			if c.Store(n).Repository().GroupID() != oldID {
				return false
			}
		}
		return true
	})
	leader := c.WaitLeader(1, 10*time.Second)
	stream, _ := askBackup(t, clientAddrOf(c, 1, leader.Status().Name))
	c.Stop("G1S3")
	c.Wipe("G1S3")
	if _, _, err := storegroup.RestoreDataDir(c.DataDir("G1S3"), bytes.NewReader(stream), storegroup.Restore{
		GroupID: storegroup.RestoredGroupID("b", oldID), Members: c.Members(1)}); err != nil {
		t.Fatal(err)
	}
	s, err := storegroup.Open(c.Config("G1S3"))
	if err == nil {
		s.Close()
		t.Fatal("a restored store started among the members of the group it came from")
	}
	if !strings.Contains(err.Error(), "restored from a backup of group identity "+oldID) {
		t.Fatalf("the refusal: %v", err)
	}
}

// A store of the old group started among restored ones, holding more
// than the backup, never brings its state in: it finds its group under
// the restored identity, moves its files to a numbered backup and rejoins
// empty, and the group keeps the restored state.
func TestOldStoreAmongRestoredOnesRejoinsEmpty(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.PublishDirect(ctx, 1, "s", 1, [][]byte{payload(1), payload(2)}); err != nil {
		t.Fatal(err)
	}
	oldID := c.GroupID(1, 10*time.Second)
	leader := c.WaitLeader(1, 10*time.Second)
	stream, _ := askBackup(t, clientAddrOf(c, 1, leader.Status().Name))
	if err := c.PublishDirect(ctx, 1, "s", 3, [][]byte{payload(3)}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(10*time.Second, "G1S3 holds message 3", func() bool {
		info, _, _ := c.Store("G1S3").Repository().Source("s")
		return info.HighSeq == 3
	})
	for _, n := range []string{"G1S1", "G1S2", "G1S3"} {
		c.Stop(n)
	}
	newID := storegroup.RestoredGroupID("b", oldID)
	for _, n := range []string{"G1S1", "G1S2"} {
		c.Wipe(n)
		if _, _, err := storegroup.RestoreDataDir(c.DataDir(n), bytes.NewReader(stream), storegroup.Restore{GroupID: newID, Members: c.Members(1)}); err != nil {
			t.Fatal(err)
		}
		c.StartStore(n)
	}
	c.WaitLeader(1, 20*time.Second)
	old := c.StartStore("G1S3")
	c.Eventually(20*time.Second, "the old store rejoined the restored group", func() bool {
		return old.Repository().GroupID() == newID && !old.Status().CatchingUp
	})
	for _, n := range []string{"G1S1", "G1S2", "G1S3"} {
		if info, _, _ := c.Store(n).Repository().Source("s"); info.HighSeq != 2 {
			t.Errorf("%s holds s up to %d, want the backup's 2", n, info.HighSeq)
		}
	}
	backups, err := storegroup.ListBackups(c.DataDir("G1S3"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("the old store's files: %d backups (%v), want 1", len(backups), err)
	}
}

// A backup larger than a chunk arrives in order, whole, and decodes.
func TestBackupOfSeveralChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("several restarts of a group (or a 4 MiB backup); skipped with -short")
	}
	c := clustertest.Start(t, 1, clustertest.PatientRaft)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big := bytes.Repeat([]byte("x"), 100<<10)
	batch := make([][]byte, 40)
	for i := range batch {
		batch[i] = append(payload(uint64(i+1)), big...)
	}
	if err := c.PublishDirect(ctx, 1, "s", 1, batch); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(1, 10*time.Second)
	stream, last, chunks := askBackupChunks(t, clientAddrOf(c, 1, leader.Status().Name))
	if chunks < 4 {
		t.Fatalf("a %d-byte backup came in %d chunks, want 4 or more", len(stream), chunks)
	}
	r, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Restore(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	msgs, err := r.Read("s", 1, 40, 100, 1<<30)
	if err != nil || len(msgs) != 40 || r.AppliedIndex() != last.Index {
		t.Fatalf("the backup holds %d messages at index %d (%v), want 40 at %d", len(msgs), r.AppliedIndex(), err, last.Index)
	}
	for i, m := range msgs {
		if !bytes.Equal(m.Payload, append(payload(uint64(i+1)), big...)) {
			t.Fatalf("message %d differs", i+1)
		}
	}
}
