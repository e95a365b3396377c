package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The soak (--soak 30m): one `umstored dev` publishing flat out (or at
// --soak-rate) for the whole duration with a small retention limit, so that every store
// releases old messages and its log is compacted all the time. It is run
// as consecutive umpub processes of --soak-interval each on the same
// source (each is one row: its throughput, latency, the disk use and
// memory then), because one umpub keeps every message's send time and
// latency in memory. Between two of them the source is re-registered: a
// gap of tens of milliseconds.
type soakResult struct {
	DurationS      float64     `json:"duration_s"`
	IntervalS      float64     `json:"interval_s"`
	Size           int         `json:"message_size"`
	Payload        string      `json:"payload"`
	RetentionBytes int64       `json:"retention_max_bytes"` // per source, per store
	StoreArgs      string      `json:"umstored_args"`
	Chunks         []soakChunk `json:"chunks"`
	// StartMsgsPerS and EndMsgsPerS are the first and the last chunk's
	// throughput; the goal is EndOverStart >= 0.9.
	StartMsgsPerS float64 `json:"start_msgs_per_s"`
	EndMsgsPerS   float64 `json:"end_msgs_per_s"`
	EndOverStart  float64 `json:"end_over_start"`
	// Disk use (the data directory, six stores): the highest sample over the
	// run, and over its first and last thirds (disk use bounded: the last
	// third's is not above the first third's by more than the noise).
	DiskPeakMB           float64 `json:"disk_peak_mb"`
	DiskFirstThirdPeakMB float64 `json:"disk_first_third_peak_mb"`
	DiskLastThirdPeakMB  float64 `json:"disk_last_third_peak_mb"`
	RSSPeakMB            float64 `json:"rss_peak_mb"`
	// Rate is the offered msgs/s (--soak-rate; 0: flat out).
	Rate float64 `json:"rate,omitempty"`
	// Stopped says why the soak ended before its duration, if it did.
	Stopped string `json:"stopped,omitempty"`
	Note    string `json:"note,omitempty"`
}

// soakChunk is one umpub run of the soak and the state at its end.
type soakChunk struct {
	StartS     float64 `json:"start_s"` // since the soak started
	Sent       int     `json:"sent"`
	Stable     int     `json:"stable"`
	MsgsPerS   float64 `json:"msgs_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	P50US      int64   `json:"p50_us"`
	P99US      int64   `json:"p99_us"`
	DiskMB     float64 `json:"disk_mb"`      // the data directory at the chunk's end
	DiskPeakMB float64 `json:"disk_peak_mb"` // the highest sample during the chunk (every 5 s)
	// DiskByKind splits DiskMB by the first path element inside each
	// store's directory (raft.db, repo.db, a log directory...), summed over
	// the stores; files outside a store directory are "other".
	DiskByKind map[string]float64 `json:"disk_by_kind_mb"`
	// RetainedMB is what the stores say they retain (umstore_repository_bytes
	// on /metrics, summed over the six stores); 0 if the metric is absent.
	RetainedMB float64 `json:"retained_mb"`
	procMem
	RSSPeakChunkMB  float64 `json:"rss_peak_chunk_mb"` // highest VmRSS sampled during the chunk
	HeapMB          float64 `json:"go_heap_inuse_mb"`
	CPUSeconds      float64 `json:"cpu_s"`        // umstored's during the chunk
	ClientCPUSecond float64 `json:"client_cpu_s"` // umpub's
	// WritePerPayloadPerStore is umstored's write_bytes during the chunk
	// per payload byte made stable, per store (÷ 6).
	WritePerPayloadPerStore float64 `json:"disk_bytes_per_payload_byte_per_store"`
	Error                   string  `json:"error,omitempty"`
}

// soakArgs are the soak's settings from the command line.
type soakArgs struct {
	duration, interval time.Duration
	size, flight       int
	rate               float64 // msgs/s; 0: flat out
	retentionBytes     int64
	payload            string
	extra              []string // --soak-store-args
}

// soakMinFree is the free space below which the soak stops early: a store
// whose disk use is not bounded would otherwise fill the disk that other
// work shares.
const soakMinFree = 8 << 30

// freeBytes is the space available to unprivileged users in dir's file
// system, or -1 if unknown.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

func runSoak(ctx context.Context, b umBins, dir string, a soakArgs, logf func(string, ...any)) (*soakResult, error) {
	args := b.retentionArgs(a.retentionBytes, a.extra)
	res := &soakResult{DurationS: a.duration.Seconds(), IntervalS: a.interval.Seconds(), Size: a.size, Payload: a.payload,
		Rate: a.rate, RetentionBytes: a.retentionBytes, StoreArgs: strings.Join(args, " ")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dev, err := startUmDev(ctx, b, filepath.Join(dir, "dev"), filepath.Join(dir, "umstored.log"), args)
	if err != nil {
		return nil, err
	}
	defer dev.p.stop(30 * time.Second)
	pid := dev.p.pid()
	how := "flat out"
	if a.rate > 0 {
		how = fmt.Sprintf("at %.0f msgs/s", a.rate)
	}
	logf("soak: %v of %d B messages %s, retention %d bytes per source, umstored dev %s", a.duration, a.size, how, a.retentionBytes, res.StoreArgs)
	t0 := time.Now()
	for i := 0; ; i++ {
		left := a.duration - time.Since(t0)
		if left <= 0 || ctx.Err() != nil {
			break
		}
		chunk := min(a.interval, left)
		c := soakChunk{StartS: time.Since(t0).Seconds()}
		before := readProcIO(pid)
		stopFeed := make(chan struct{})
		samp := startSampler(dev.dir, pid, 5*time.Second, soakMinFree, func() { close(stopFeed) })
		r, err := runUmpub(ctx, b, dev.deployment, "soak", load{size: a.size, sources: 1, flight: a.flight, rate: a.rate, payload: a.payload,
			duration: chunk, stopFeed: stopFeed, seed: 3<<40 | uint64(i)}, filepath.Join(dir, "umpub.log"))
		diskPeak, rssPeak, low := samp.stop()
		wrote, cpu := readProcIO(pid).since(before)
		c.Sent, c.Stable, c.MsgsPerS, c.MBPerS = r.Sent, r.Stable, r.MsgsPerS, r.MBPerS
		c.P50US, c.P99US, c.ClientCPUSecond, c.CPUSeconds = r.LatencyUS.P50, r.LatencyUS.P99, r.CPUSeconds, cpu
		c.WritePerPayloadPerStore = ratio(float64(wrote), float64(r.Stable)*float64(a.size)) / 6
		if err != nil {
			c.Error = err.Error()
		}
		var kinds map[string]float64
		c.DiskMB, kinds = diskByKind(dev.dir)
		c.DiskByKind = kinds
		c.DiskPeakMB, c.RSSPeakChunkMB = max(diskPeak, c.DiskMB), rssPeak
		c.procMem = readProcMem(pid)
		c.RSSPeakChunkMB = max(c.RSSPeakChunkMB, c.RSSMB)
		if v, err := metricSum(ctx, dev.admin, "umstore_repository_bytes"); err == nil {
			c.RetainedMB = v / 1e6
		}
		if v, err := metric(ctx, dev.admin, "go_memstats_heap_inuse_bytes"); err == nil {
			c.HeapMB = v / 1e6
		}
		logf("soak %5.0fs: %8.0f msgs/s  p99 %6.1f ms  disk %6.0f MB (peak %6.0f; %s)  retained %5.0f MB  RSS %4.0f MB (peak %4.0f)  CPU %5.1f s  %.2f B/B per store %s",
			c.StartS, c.MsgsPerS, float64(c.P99US)/1e3, c.DiskMB, c.DiskPeakMB, kindsText(kinds), c.RetainedMB, c.RSSMB, c.RSSPeakChunkMB, c.CPUSeconds, c.WritePerPayloadPerStore, c.Error)
		res.Chunks = append(res.Chunks, c)
		if err != nil && ctx.Err() != nil {
			return res, err
		}
		if low {
			summarizeSoak(res)
			res.Stopped = fmt.Sprintf("stopped after %.0f s: less than %d GiB free on the disk (disk use %.0f MB and growing)", time.Since(t0).Seconds(), soakMinFree>>30, c.DiskMB)
			logf("soak: %s", res.Stopped)
			return res, nil
		}
		if err != nil && r.Stable == 0 {
			// Nothing became stable: umpub could not publish at all. Stop
			// rather than fail the same way for the rest of the soak.
			summarizeSoak(res)
			return res, err
		}
	}
	summarizeSoak(res)
	res.Note = fmt.Sprintf("consecutive umpub runs of %v on source \"soak\"; disk sampled every 5 s; retention --retention-max-bytes %d per source on every store", a.interval, a.retentionBytes)
	return res, nil
}

// summarizeSoak fills the soak's start/end and peak figures from its chunks.
func summarizeSoak(r *soakResult) {
	n := len(r.Chunks)
	if n == 0 {
		return
	}
	r.StartMsgsPerS, r.EndMsgsPerS = r.Chunks[0].MsgsPerS, r.Chunks[n-1].MsgsPerS
	// A last chunk much shorter than the others (the soak's remainder)
	// says little: use the one before it.
	if n > 2 && r.IntervalS > 0 && r.DurationS-r.Chunks[n-1].StartS < r.IntervalS/2 {
		r.EndMsgsPerS = r.Chunks[n-2].MsgsPerS
	}
	r.EndOverStart = ratio(r.EndMsgsPerS, r.StartMsgsPerS)
	third := max(1, n/3)
	for i, c := range r.Chunks {
		r.DiskPeakMB = max(r.DiskPeakMB, c.DiskPeakMB)
		r.RSSPeakMB = max(r.RSSPeakMB, c.RSSPeakChunkMB)
		if i < third {
			r.DiskFirstThirdPeakMB = max(r.DiskFirstThirdPeakMB, c.DiskPeakMB)
		}
		if i >= n-third {
			r.DiskLastThirdPeakMB = max(r.DiskLastThirdPeakMB, c.DiskPeakMB)
		}
	}
}

// sampler records the highest data-directory size and VmRSS of a process
// every period until stopped.
type sampler struct {
	stopc     chan struct{}
	wg        sync.WaitGroup
	disk, rss float64 // written by the sampling goroutine, read after it ends
	low       bool    // free space fell below the minimum
}

// startSampler samples every period; when the disk's free space falls
// below minFree bytes it calls onLow once and stops sampling.
func startSampler(dir, pid string, period time.Duration, minFree int64, onLow func()) *sampler {
	s := &sampler{stopc: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.stopc:
				return
			case <-t.C:
				s.disk = max(s.disk, float64(dirSize(dir))/1e6)
				s.rss = max(s.rss, readProcMem(pid).RSSMB)
				if f := freeBytes(dir); f >= 0 && f < minFree {
					s.low = true
					onLow()
					return
				}
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the highest disk use and RSS seen
// (MB), and whether the disk ran low.
func (s *sampler) stop() (disk, rss float64, low bool) {
	close(s.stopc)
	s.wg.Wait()
	return s.disk, s.rss, s.low
}

// storeDirName is how umstore names a store (and its directory): G1S1.
var storeDirName = regexp.MustCompile(`^G\d+S\d+$`)

// diskByKind is the bytes of the regular files under dir (MB), in total and
// by the first path element inside a store's directory, over all stores.
func diskByKind(dir string) (float64, map[string]float64) {
	kinds := map[string]float64{}
	var total float64
	_ = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		mb := float64(fi.Size()) / 1e6
		total += mb
		kinds[fileKind(dir, path)] += mb
		return nil
	})
	return total, kinds
}

// fileKind is the first path element of path after the store directory it
// is in (a directory named like G1S1), or "other".
func fileKind(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return "other"
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := 0; i+1 < len(parts); i++ {
		if storeDirName.MatchString(parts[i]) {
			return parts[i+1]
		}
	}
	return "other"
}

// kindsText is "raft.db 123, repo.db 456" for the log, largest first.
func kindsText(kinds map[string]float64) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range kinds {
		if v >= 0.5 {
			all = append(all, kv{k, v})
		}
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && (all[j].v > all[j-1].v || all[j].v == all[j-1].v && all[j].k < all[j-1].k); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	var s []string
	for _, x := range all {
		s = append(s, fmt.Sprintf("%s %.0f", x.k, x.v))
	}
	return strings.Join(s, ", ")
}

// metricSum is the sum of every sample of a metric on /metrics, labelled
// or not (one per store for the stores' metrics).
func metricSum(ctx context.Context, admin, name string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/metrics", nil)
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("metric %s not found on http://%s/metrics", name, admin)
	}
	return sum, nil
}
