package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// catchupResult is the wiped-store test: host A of a two-host deployment
// loses its disk and its stores catch up from the others.
type catchupResult struct {
	Messages      int     `json:"messages"`
	MessageSize   int     `json:"message_size"`
	PublishedMB   float64 `json:"published_mb"` // payload, 10^6 bytes, per group
	DiskTestMB    int     `json:"disk_test_mib"`
	DiskWriteMBps float64 `json:"disk_write_mb_per_s"` // median of DiskRuns
	// DiskRuns: three sequential writes of DiskTestMB + one fsync each, in
	// the same filesystem, as dd bs=1M conv=fdatasync.
	DiskRuns []float64 `json:"disk_write_runs_mb_per_s"`
	// WallS is from restarting host A's daemon to every one of its stores
	// caught up (not catching up, with state, holding the leaders' bytes).
	WallS          float64        `json:"wall_s"`
	RestoredMB     float64        `json:"restored_payload_mb"` // payload over all of A's stores
	RestoredDiskMB float64        `json:"restored_disk_mb"`    // A's data directory afterwards
	PayloadMBps    float64        `json:"payload_mb_per_s"`    // RestoredMB / WallS
	DiskMBps       float64        `json:"disk_mb_per_s"`       // RestoredDiskMB / WallS
	Stores         []catchupStore `json:"stores"`
	Note           string         `json:"note,omitempty"`
}

type catchupStore struct {
	Name      string  `json:"name"`
	Group     int     `json:"group"`
	PayloadMB float64 `json:"payload_mb"`
	StartS    float64 `json:"start_s"` // since the restart: first seen catching up (after waiting for its turn)
	DoneS     float64 `json:"done_s"`
	MBps      float64 `json:"payload_mb_per_s"` // PayloadMB / (DoneS - StartS)
}

func runCatchup(ctx context.Context, b umBins, dir string, mb, size, sources, flight, diskMB int, logf func(string, ...any)) (*catchupResult, error) {
	res := &catchupResult{MessageSize: size, DiskTestMB: diskMB}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log.txt")
	base, err := freeBasePort("127.0.0.2", "127.0.0.3")
	if err != nil {
		return nil, err
	}
	pa, err := freePort("127.0.0.2")
	if err != nil {
		return nil, err
	}
	pb, err := freePort("127.0.0.3")
	if err != nil {
		return nil, err
	}
	adminA, adminB := fmt.Sprintf("127.0.0.2:%d", pa), fmt.Sprintf("127.0.0.3:%d", pb)
	file := filepath.Join(dir, "deployment.yaml")
	plan := exec.CommandContext(ctx, b.umstored, "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", strconv.Itoa(base), "--out", file)
	if out, err := plan.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("umstored plan: %v\n%s", err, out)
	}
	dirA, dirB := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	runArgs := func(host, d, admin string) []string {
		return append([]string{"run", "--deployment", file, "--host", host, "--data-dir", d, "--admin-addr", admin}, b.storeArgs...)
	}
	a, err := startProc("umstored run A", b.umstored, runArgs("A", dirA, adminA), filepath.Join(dir, "A.log"), "")
	if err != nil {
		return nil, err
	}
	defer func() { a.stop(15 * time.Second) }()
	bp, err := startProc("umstored run B", b.umstored, runArgs("B", dirB, adminB), filepath.Join(dir, "B.log"), "")
	if err != nil {
		return nil, err
	}
	defer bp.stop(15 * time.Second)
	for _, ad := range []string{adminA, adminB} {
		if err := waitReadyz(ctx, ad, 90*time.Second); err != nil {
			return nil, err
		}
	}

	logf("catch-up: disk sequential write, 3 × %d MiB + fsync", diskMB)
	for i := 0; i < 3; i++ {
		v, err := diskWriteMBps(dir, diskMB)
		if err != nil {
			return nil, fmt.Errorf("disk write test: %w", err)
		}
		res.DiskRuns = append(res.DiskRuns, v)
	}
	res.DiskWriteMBps = median(res.DiskRuns)
	logf("catch-up: disk %.0f MB/s; publishing %d MiB of %d-byte messages", res.DiskWriteMBps, mb, size)
	res.Messages = (mb << 20) / size / sources * sources
	pr, err := runUmpub(ctx, b, file, "catchup", load{size: size, count: res.Messages, sources: sources, flight: flight}, logPath)
	if err != nil {
		return nil, err
	}
	logf("catch-up: published at %.0f msgs/s", pr.MsgsPerS)

	// Both groups hold everything (the publisher sends to both; repair
	// fills any gap): wait until every store has the bytes of B's stores.
	target := map[int]uint64{}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		sa, errA := getStatus(ctx, adminA)
		sb, errB := getStatus(ctx, adminB)
		if errA == nil && errB == nil {
			for _, s := range sb.Stores {
				target[s.Group] = max(target[s.Group], s.bytes())
			}
			same := len(target) == 2
			for _, s := range append(sa.Stores, sb.Stores...) {
				same = same && s.bytes() == target[s.Group]
			}
			if same {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stores do not agree on what they hold after publishing: %v %v", errA, errB)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	res.PublishedMB = float64(target[1]) / 1e6

	logf("catch-up: kill -9 host A, wipe its data directory, restart it")
	a.kill9()
	if err := os.RemoveAll(dirA); err != nil {
		return nil, err
	}
	t0 := time.Now()
	a, err = startProc("umstored run A", b.umstored, runArgs("A", dirA, adminA), filepath.Join(dir, "A.log"), "")
	if err != nil {
		return nil, err
	}
	start := map[string]time.Time{}
	done := map[string]time.Time{}
	group := map[string]int{}
	timeout := 10*time.Minute + time.Duration(mb)*time.Second
	for {
		st, err := getStatus(ctx, adminA)
		now := time.Now()
		if err == nil && len(st.Stores) > 0 {
			all := true
			for _, s := range st.Stores {
				group[s.Name] = s.Group
				if _, ok := start[s.Name]; !ok && !s.WaitingToJoin && (s.CatchingUp || s.State != "starting") {
					start[s.Name] = now
				}
				if _, ok := done[s.Name]; !ok && !s.WaitingToJoin && !s.CatchingUp && s.HasState && s.bytes() == target[s.Group] {
					done[s.Name] = now
					logf("catch-up: %s caught up after %.1fs", s.Name, now.Sub(t0).Seconds())
				}
				if _, ok := done[s.Name]; !ok {
					all = false
				}
			}
			if all {
				break
			}
		}
		if now.Sub(t0) > timeout {
			return nil, fmt.Errorf("host A's stores not caught up after %v (logs in %s)", timeout, dir)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	var last time.Time
	for name, d := range done {
		if d.After(last) {
			last = d
		}
		cs := catchupStore{Name: name, Group: group[name], PayloadMB: float64(target[group[name]]) / 1e6,
			StartS: start[name].Sub(t0).Seconds(), DoneS: d.Sub(t0).Seconds()}
		if el := d.Sub(start[name]).Seconds(); el > 0 {
			cs.MBps = cs.PayloadMB / el
		}
		res.RestoredMB += cs.PayloadMB
		res.Stores = append(res.Stores, cs)
	}
	sortStores(res.Stores)
	res.WallS = last.Sub(t0).Seconds()
	res.RestoredDiskMB = float64(dirSize(dirA)) / 1e6
	res.PayloadMBps = res.RestoredMB / res.WallS
	res.DiskMBps = res.RestoredDiskMB / res.WallS
	res.Note = "status polled every 100 ms; start_s is when a store was first seen running or catching up (an empty store waits for the one before it in its group)"
	return res, nil
}

func sortStores(s []catchupStore) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].Name < s[j-1].Name; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// memoryResult is the daemon's resident memory as retained bytes grow.
type memoryResult struct {
	MessageSize int         `json:"message_size"`
	Steps       []memSample `json:"steps"`
	Note        string      `json:"note,omitempty"`
}

type memSample struct {
	RetainedMB float64 `json:"retained_payload_mb"` // per group
	RSSMB      float64 `json:"rss_mb"`              // process_resident_memory_bytes
	AnonMB     float64 `json:"rss_anon_mb"`         // RssAnon in /proc/PID/status: heap, stacks
	FileMB     float64 `json:"rss_file_mb"`         // RssFile: mapped files (bbolt's mmap), reclaimable
	HeapMB     float64 `json:"go_heap_inuse_mb"`
	DiskMB     float64 `json:"data_dir_mb"`
}

// runMemory starts a fresh `umstored dev`, publishes mb MiB in four steps
// and samples process_resident_memory_bytes after each.
func runMemory(ctx context.Context, b umBins, dir string, mb, size, sources, flight int, logf func(string, ...any)) (*memoryResult, error) {
	res := &memoryResult{MessageSize: size}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dev, err := startUmDev(ctx, b, filepath.Join(dir, "dev"), filepath.Join(dir, "umstored.log"))
	if err != nil {
		return nil, err
	}
	defer dev.p.stop(15 * time.Second)
	sample := func(retained float64) error {
		if err := sleepCtx(ctx, 3*time.Second); err != nil {
			return err
		}
		rss, err := metric(ctx, dev.admin, "process_resident_memory_bytes")
		if err != nil {
			return err
		}
		heap, err := metric(ctx, dev.admin, "go_memstats_heap_inuse_bytes")
		if err != nil {
			return err
		}
		s := memSample{RetainedMB: retained, RSSMB: rss / 1e6, HeapMB: heap / 1e6, DiskMB: float64(dirSize(dev.dir)) / 1e6}
		s.AnonMB, s.FileMB = procRss(dev.p.cmd.Process.Pid)
		logf("memory: retained %.0f MB: RSS %.0f MB (anonymous %.0f, file %.0f), Go heap in use %.0f MB, data %.0f MB", s.RetainedMB, s.RSSMB, s.AnonMB, s.FileMB, s.HeapMB, s.DiskMB)
		res.Steps = append(res.Steps, s)
		return nil
	}
	if err := sample(0); err != nil {
		return nil, err
	}
	const steps = 4
	per := (mb << 20) / size / steps / sources * sources
	var retained float64
	for i := 1; i <= steps; i++ {
		r, err := runUmpub(ctx, b, dev.deployment, fmt.Sprintf("mem%d", i), load{size: size, count: per, sources: sources, flight: flight}, filepath.Join(dir, "umpub.log"))
		if err != nil {
			return nil, err
		}
		retained += float64(r.Stable) * float64(size) / 1e6
		if err := sample(retained); err != nil {
			return nil, err
		}
	}
	res.Note = "one umstored dev process holds all six stores; RSS is that process's, sampled 3 s after each step"
	return res, nil
}

// procRss reads RssAnon and RssFile (MB) from /proc/PID/status.
func procRss(pid int) (anon, file float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "RssAnon:":
			anon = kb * 1024 / 1e6
		case "RssFile:":
			file = kb * 1024 / 1e6
		}
	}
	return anon, file
}
