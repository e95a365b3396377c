package walcache

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
	"golang.org/x/sys/unix"
)

// resident reports which 4 KiB pages of path are in the page cache.
func resident(t *testing.T, path string, size int) []bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (size+pageSize-1)/pageSize)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 == 1
	}
	return out
}

// A segment written and synced in batches keeps only its last Keep bytes
// cached, and every byte reads back as written, before and after Close.
func TestSyncedPagesBehindTheWindowAreDropped(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages cannot be dropped")
	}
	const (
		keep  = 1 << 20
		batch = 256 << 10
		total = 12 << 20
	)
	vfs := &FS{FS: New().FS, Keep: keep}
	w, err := vfs.Create(dir, "00001.wal", total)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, total)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	for off := 0; off < total; off += batch {
		if _, err := w.WriteAt(want[off:off+batch], int64(off)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "00001.wal")
	pages := resident(t, path, total)
	// The last drop happened at a multiple of dropStep past the window:
	// everything before total-keep-dropStep is gone, the window stays.
	for i, in := range pages {
		off := i * pageSize
		switch {
		case off < total-keep-dropStep && in:
			t.Fatalf("page at %d (of %d) still cached, %d behind the end", off, total, total-off)
		case off >= total-keep && !in:
			t.Fatalf("page at %d inside the window of %d bytes was dropped", off, keep)
		}
	}
	got := make([]byte, total)
	if _, err := w.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the file does not read back as written")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, in := range resident(t, path, total) {
		if in {
			t.Fatalf("page at %d still cached after Close", i*pageSize)
		}
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after Close the file does not read back as written (%v)", err)
	}
}

// Both ways raft-wal gets a segment to write, a new one and the tail it
// reopens, give the dropping file.
func TestCreateAndOpenWriterWrapTheSegment(t *testing.T) {
	dir := t.TempDir()
	vfs := New()
	w, err := vfs.Create(dir, "00001.wal", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*file); !ok {
		t.Fatalf("Create returned %T, not the dropping file", w)
	}
	w.Close()
	w, err = vfs.OpenWriter(dir, "00001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := w.(*file); !ok {
		t.Fatalf("OpenWriter returned %T, not the dropping file", w)
	}
}

// BenchmarkSyncedWrites writes 256 KiB batches, each synced, through raft-wal's
// own file system (cached: every page stays in the page cache) and through
// this one (dropped), and reports the process's CPU per byte. Run it over a
// few GiB for the page cache to matter, alternating:
//
//	go test ./internal/walcache -run '^$' -bench SyncedWrites -benchtime 12000x -count 2
func BenchmarkSyncedWrites(b *testing.B) {
	const batch = 256 << 10
	for _, tc := range []struct {
		name string
		vfs  interface {
			Create(dir, name string, size uint64) (types.WritableFile, error)
		}
	}{{"cached", fs.New()}, {"dropped", New()}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := tc.vfs.Create(dir, "00001.wal", 0)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			buf := make([]byte, batch)
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			var before, after unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &before)
			b.SetBytes(batch)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.WriteAt(buf, int64(i)*batch); err != nil {
					b.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			unix.Getrusage(unix.RUSAGE_SELF, &after)
			cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N*batch), "cpu-ns/B")
		})
	}
}

// A sealed segment read from start to end keeps only what is near its read
// position cached; two readers taking turns at different places drop
// nothing (neither continues the other's reads); every read returns the
// file's bytes.
func TestSequentialReadsDropWhatTheyPassed(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages cannot be dropped")
	}
	const total, chunk = 32 << 20, 256 << 10
	want := make([]byte, total)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, "00001.wal")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // clean pages, as a sealed segment's are
		t.Fatal(err)
	}
	f.Close()
	readAll := func(r interface {
		ReadAt([]byte, int64) (int, error)
	}, offs []int64) {
		t.Helper()
		got := make([]byte, chunk)
		for _, off := range offs {
			if _, err := r.ReadAt(got, off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[off:off+chunk]) {
				t.Fatalf("read at %d returned other bytes", off)
			}
		}
	}

	vfs := New()
	r, err := vfs.OpenReader(dir, "00001.wal")
	if err != nil {
		t.Fatal(err)
	}
	var seq []int64
	for off := int64(0); off < total; off += chunk {
		seq = append(seq, off)
	}
	readAll(r, seq)
	r.Close()
	for i, in := range resident(t, path, total) {
		if off := i * pageSize; off < total-readKeep-dropStep && in {
			t.Fatalf("page at %d still cached after a sequential read passed it by %d", off, total-off)
		}
	}

	// Read everything once more through a plain file, so it is all cached.
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	r, err = vfs.OpenReader(dir, "00001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var turns []int64
	for i := int64(0); i < total/2; i += chunk {
		turns = append(turns, i, total/2+i)
	}
	readAll(r, turns)
	for i, in := range resident(t, path, total) {
		if !in {
			t.Fatalf("page at %d dropped while two readers took turns", i*pageSize)
		}
	}
}
