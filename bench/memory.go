package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// memoryResult is umstored's resident memory as retained bytes grow: one
// `umstored dev` process holding all six stores (two groups of three), so
// at the last step every store retains about 1 GB and the process 6 GB.
// The goal is on the last step's RSS (≤ 300 MB).
type memoryResult struct {
	MessageSize int         `json:"message_size"`
	Payload     string      `json:"payload"`
	Steps       []memSample `json:"steps"`
	// FinalRSSMB and PeakRSSMB are the umstored process's RSS after the
	// last step and its high-water mark over the whole test (VmHWM).
	FinalRSSMB float64 `json:"final_rss_mb"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	Note       string  `json:"note,omitempty"`
}

type memSample struct {
	RetainedMB float64 `json:"retained_payload_mb"` // per group
	procMem
	HeapMB float64 `json:"go_heap_inuse_mb"` // go_memstats_heap_inuse_bytes on /metrics; 0 if absent
	DiskMB float64 `json:"data_dir_mb"`
}

// procMem is a process's memory from /proc/PID/status, in MB (10^6 bytes).
type procMem struct {
	RSSMB  float64 `json:"rss_mb"`      // VmRSS
	PeakMB float64 `json:"rss_peak_mb"` // VmHWM: the highest VmRSS so far
	AnonMB float64 `json:"rss_anon_mb"` // RssAnon: heap, stacks
	FileMB float64 `json:"rss_file_mb"` // RssFile: mapped files, reclaimable
}

// readProcMem reads pid's memory; fields it cannot read are 0.
func readProcMem(pid string) procMem {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return procMem{}
	}
	return parseProcMem(string(b))
}

func parseProcMem(status string) procMem {
	var m procMem
	for _, l := range strings.Split(status, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		mb := kb * 1024 / 1e6
		switch f[0] {
		case "VmRSS:":
			m.RSSMB = mb
		case "VmHWM:":
			m.PeakMB = mb
		case "RssAnon:":
			m.AnonMB = mb
		case "RssFile:":
			m.FileMB = mb
		}
	}
	return m
}

// add sums two processes' memory (the hosts of a deployment).
func (m procMem) add(o procMem) procMem {
	return procMem{RSSMB: m.RSSMB + o.RSSMB, PeakMB: m.PeakMB + o.PeakMB, AnonMB: m.AnonMB + o.AnonMB, FileMB: m.FileMB + o.FileMB}
}

// runMemory starts a fresh `umstored dev`, publishes mb MiB in four steps
// and samples its memory 3 s after each.
func runMemory(ctx context.Context, b umBins, dir string, mb, size, sources, flight int, payload string, logf func(string, ...any)) (*memoryResult, error) {
	res := &memoryResult{MessageSize: size, Payload: payload}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dev, err := startUmDev(ctx, b, filepath.Join(dir, "dev"), filepath.Join(dir, "umstored.log"), b.storeArgs())
	if err != nil {
		return nil, err
	}
	defer dev.p.stop(15 * time.Second)
	sample := func(retained float64) error {
		if err := sleepCtx(ctx, 3*time.Second); err != nil {
			return err
		}
		s := memSample{RetainedMB: retained, procMem: readProcMem(dev.p.pid()), DiskMB: float64(dirSize(dev.dir)) / 1e6}
		if heap, err := metric(ctx, dev.admin, "go_memstats_heap_inuse_bytes"); err == nil {
			s.HeapMB = heap / 1e6
		}
		logf("memory: retained %.0f MB per group: umstored RSS %.0f MB (anonymous %.0f, file %.0f; peak so far %.0f), Go heap in use %.0f MB, data %.0f MB",
			s.RetainedMB, s.RSSMB, s.AnonMB, s.FileMB, s.PeakMB, s.HeapMB, s.DiskMB)
		res.Steps = append(res.Steps, s)
		res.FinalRSSMB, res.PeakRSSMB = s.RSSMB, s.PeakMB
		return nil
	}
	if err := sample(0); err != nil {
		return nil, err
	}
	const steps = 4
	per := (mb << 20) / size / steps / sources * sources
	var retained float64
	for i := 1; i <= steps; i++ {
		r, err := runUmpub(ctx, b, dev.deployment, fmt.Sprintf("mem%d", i), load{size: size, count: per, sources: sources, flight: flight, payload: payload, seed: 2<<40 | uint64(i)}, filepath.Join(dir, "umpub.log"))
		if err != nil {
			return nil, err
		}
		retained += float64(r.Stable) * float64(size) / 1e6
		if err := sample(retained); err != nil {
			return nil, err
		}
	}
	res.Note = "one umstored dev process holds all six stores (each retains the group's payload); RSS is VmRSS of /proc/PID/status 3 s after each step, peak is VmHWM"
	return res, nil
}
