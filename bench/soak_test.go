package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileKind(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"A/G1S1/raft.db", "raft.db"},
		{"A/G2S3/repo.db", "repo.db"},
		{"G1S2/wal/00001.wal", "wal"},
		{"G1S2/snapshots/1-2-3/state.bin", "snapshots"},
		{"deployment.yaml", "other"},
		{"A/G1S1", "other"}, // a file named like a store, not in one
	} {
		if got := fileKind("/d", filepath.Join("/d", tc.path)); got != tc.want {
			t.Errorf("fileKind(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestDiskByKind(t *testing.T) {
	dir := t.TempDir()
	for path, n := range map[string]int{"A/G1S1/raft.db": 3e6, "B/G1S2/raft.db": 1e6, "A/G1S1/wal/1.wal": 2e6, "deployment.yaml": 5e5} {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	total, kinds := diskByKind(dir)
	if total != 6.5 || kinds["raft.db"] != 4 || kinds["wal"] != 2 || kinds["other"] != 0.5 {
		t.Fatalf("diskByKind = %v, %v", total, kinds)
	}
	if got := kindsText(kinds); got != "raft.db 4, wal 2, other 0" && got != "raft.db 4, wal 2, other 1" {
		t.Fatalf("kindsText = %q", got)
	}
}

func TestMetricSum(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, strings.Join([]string{
			"# HELP umstore_repository_bytes payload bytes held",
			`umstore_repository_bytes{group="1",store="G1S1"} 1.5e+06`,
			`umstore_repository_bytes{group="1",store="G1S2"} 500000`,
			`umstore_repository_bytes_total 7`,
			`umstore_repository_bytesx 9`,
			"process_resident_memory_bytes 1234",
		}, "\n"))
	}))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	if v, err := metricSum(context.Background(), admin, "umstore_repository_bytes"); err != nil || v != 2e6 {
		t.Fatalf("metricSum = %v, %v, want 2e6", v, err)
	}
	if v, err := metricSum(context.Background(), admin, "process_resident_memory_bytes"); err != nil || v != 1234 {
		t.Fatalf("metricSum unlabelled = %v, %v", v, err)
	}
	if _, err := metricSum(context.Background(), admin, "absent"); err == nil {
		t.Fatal("metricSum of an absent metric: no error")
	}
}

func TestSummarizeSoak(t *testing.T) {
	for _, tc := range []struct {
		name        string
		starts, mps []float64
		disk        []float64
		end, ratio  float64
		first, last float64
	}{
		{"steady", []float64{0, 60, 120}, []float64{100, 95, 91}, []float64{10, 30, 20}, 91, 0.91, 10, 20},
		// The last chunk is a short remainder: the one before it is the end.
		{"remainder", []float64{0, 60, 120, 180}, []float64{100, 90, 80, 10}, []float64{1, 2, 3, 4}, 80, 0.8, 1, 4},
		{"one chunk", []float64{0}, []float64{100}, []float64{5}, 100, 1, 5, 5},
	} {
		r := &soakResult{IntervalS: 60, DurationS: 200}
		for i := range tc.starts {
			r.Chunks = append(r.Chunks, soakChunk{StartS: tc.starts[i], MsgsPerS: tc.mps[i], DiskPeakMB: tc.disk[i]})
		}
		summarizeSoak(r)
		if r.EndMsgsPerS != tc.end || r.EndOverStart != tc.ratio || r.DiskFirstThirdPeakMB != tc.first || r.DiskLastThirdPeakMB != tc.last {
			t.Errorf("%s: end %v (%v), disk first/last third %v/%v; want %v (%v), %v/%v", tc.name, r.EndMsgsPerS, r.EndOverStart,
				r.DiskFirstThirdPeakMB, r.DiskLastThirdPeakMB, tc.end, tc.ratio, tc.first, tc.last)
		}
	}
}

// TestSamplerStopsWhenDiskLow checks the soak's guard: with less free space
// than asked for, the sampler says so once and calls onLow.
func TestSamplerStopsWhenDiskLow(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1e6), 0o644); err != nil {
		t.Fatal(err)
	}
	called := make(chan struct{})
	s := startSampler(dir, "self", 10*time.Millisecond, 1<<62, func() { close(called) })
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Fatal("onLow not called with an impossible minimum of free space")
	}
	disk, rss, low := s.stop()
	if !low || disk != 1 || rss <= 0 && fileExistsT("/proc/self/status") {
		t.Fatalf("sampler: disk %v MB, RSS %v MB, low %v; want 1 MB, some RSS, low", disk, rss, low)
	}

	s = startSampler(dir, "self", 10*time.Millisecond, 0, func() { t.Error("onLow called with no minimum") })
	time.Sleep(50 * time.Millisecond)
	if _, _, low := s.stop(); low {
		t.Fatal("low with no minimum")
	}
}

func fileExistsT(p string) bool { _, err := os.Stat(p); return err == nil }
