package main

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestReadProcIOCountsWrites writes and fsyncs a file of known size and
// checks that this process's write_bytes grew by at least that much.
func TestReadProcIOCountsWrites(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/io is Linux's")
	}
	dir := t.TempDir()
	// tmpfs and ramfs pages never go to storage: write_bytes does not count them.
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && (uint32(st.Type) == 0x01021994 || uint32(st.Type) == 0x858458f6) {
		t.Skipf("%s is on tmpfs or ramfs", dir)
	}
	before := readProcIO("self")
	if before.WriteBytes < 0 {
		t.Skip("/proc/self/io is not readable here (no task I/O accounting?)")
	}
	if before.CPUTicks < 0 {
		t.Fatal("/proc/self/stat: utime and stime not read")
	}

	const size = 4 << 20
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	f, err := os.Create(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	wrote, cpu := readProcIO("self").since(before)
	if wrote < size {
		t.Fatalf("write_bytes grew by %d after writing and fsyncing %d bytes", wrote, size)
	}
	if cpu < 0 {
		t.Fatalf("CPU seconds went backwards: %v", cpu)
	}
	t.Logf("wrote %d bytes: write_bytes +%d, CPU +%.2f s", size, wrote, cpu)
}

func TestReadProcIOMissingProcess(t *testing.T) {
	c := readProcIO("no-such-process")
	if c.WriteBytes >= 0 || c.CPUTicks >= 0 {
		t.Fatalf("readProcIO of no process = %+v, want both negative", c)
	}
	if w, s := c.since(c); w != 0 || s != 0 {
		t.Fatalf("since of unreadable counters = %d, %v, want 0, 0", w, s)
	}
	if w, s := (procIO{WriteBytes: 5000, CPUTicks: 150}).since(procIO{WriteBytes: 1000, CPUTicks: -1}); w != 4000 || s != 0 {
		t.Fatalf("since with CPU unread before = %d, %v, want 4000, 0", w, s)
	}
	if w, s := (procIO{WriteBytes: 5000, CPUTicks: 172}).since(procIO{WriteBytes: 1000, CPUTicks: 150}); w != 4000 || s != 0.22 {
		t.Fatalf("since = %d, %v, want 4000, 0.22", w, s)
	}
}

func TestParseWriteBytes(t *testing.T) {
	in := "rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 1\nread_bytes: 0\nwrite_bytes: 4194304\ncancelled_write_bytes: 8192\n"
	if n, err := parseWriteBytes([]byte(in)); err != nil || n != 4194304 {
		t.Fatalf("parseWriteBytes = %d, %v, want 4194304", n, err)
	}
	if _, err := parseWriteBytes([]byte("rchar: 1\n")); err == nil {
		t.Fatal("parseWriteBytes without write_bytes: no error")
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a ')' in it; utime 250, stime 75 ticks.
	in := "4242 (um (x) d) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 1000000 500\n"
	n, err := parseStatCPU([]byte(in))
	if err != nil || n != 325 {
		t.Fatalf("parseStatCPU = %v, %v, want 325", n, err)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("parseStatCPU of a short line: no error")
	}
	if _, err := parseStatCPU([]byte("4242 x S")); err == nil {
		t.Fatal("parseStatCPU without a command name: no error")
	}
}
