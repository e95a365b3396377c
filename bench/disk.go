package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// diskResult is the disk the stores write to, measured in the same run
// (the catch-up goal is a fraction of it), the same way every run, in the
// same file system as the stores' data:
//
//   - SeqMBps, the figure the goal divides by: mib MiB of random bytes in
//     1 MiB writes, then one fdatasync, timed together, as
//     `dd bs=1M count=MIB conv=fdatasync` does; three times, the median.
//   - DsyncMBps: the same bytes with an fdatasync after every 1 MiB write,
//     as `dd bs=1M oflag=dsync` does; once. The bandwidth a writer that
//     makes each large batch durable before the next can reach.
//   - Sync4KPerS: 4 KiB writes, each followed by fdatasync, for about two
//     seconds, as `dd bs=4k oflag=dsync` does: the cost of a small commit.
//   - CopyMBps: a bare copy of mib MiB from a file over loopback TCP into a
//     new file (copyFloor), three times, the median: the most a catch-up
//     could reach here if it did nothing but move the bytes.
type diskResult struct {
	MiB        int       `json:"test_mib"`
	SeqMBps    float64   `json:"seq_fdatasync_mb_per_s"` // median of SeqRuns
	SeqRuns    []float64 `json:"seq_fdatasync_runs_mb_per_s"`
	DsyncMBps  float64   `json:"seq_dsync_1mib_mb_per_s"`
	Sync4KPerS float64   `json:"fdatasyncs_4kib_per_s"`
	CopyMBps   float64   `json:"bare_copy_mb_per_s"` // median of CopyRuns
	CopyRuns   []float64 `json:"bare_copy_runs_mb_per_s"`
}

// measureDisk measures the disk under dir (see diskResult). The test files
// are removed afterwards.
func measureDisk(dir string, mib int) (*diskResult, error) {
	d := &diskResult{MiB: mib}
	block := make([]byte, 1<<20)
	// Random, not zeros or a short pattern, in case the device or the
	// file system compresses or deduplicates.
	newRandomFiller(11, 13).fill(block)
	for i := 0; i < 3; i++ {
		v, err := writeSeq(dir, block, mib, false)
		if err != nil {
			return nil, err
		}
		d.SeqRuns = append(d.SeqRuns, v)
	}
	d.SeqMBps = median(d.SeqRuns)
	v, err := writeSeq(dir, block, mib, true)
	if err != nil {
		return nil, err
	}
	d.DsyncMBps = v
	if d.Sync4KPerS, err = small4KSyncs(dir, block[:4096], 2*time.Second); err != nil {
		return nil, err
	}
	for i := 0; i < 3; i++ {
		v, err := copyFloor(dir, block, mib)
		if err != nil {
			return nil, err
		}
		d.CopyRuns = append(d.CopyRuns, v)
	}
	d.CopyMBps = median(d.CopyRuns)
	return d, nil
}

// writeSeq writes mib blocks to a new file in dir, with one fdatasync at
// the end, or after every block if each is true, and returns MB/s (10^6
// bytes) over the whole, syncs included.
func writeSeq(dir string, block []byte, mib int, each bool) (float64, error) {
	f, err := os.CreateTemp(dir, "diskbw-")
	if err != nil {
		return 0, fmt.Errorf("disk test: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fd := int(f.Fd())
	start := time.Now()
	for i := 0; i < mib; i++ {
		if _, err := f.Write(block); err != nil {
			return 0, fmt.Errorf("disk test: %w", err)
		}
		if each {
			if err := syscall.Fdatasync(fd); err != nil {
				return 0, fmt.Errorf("disk test: fdatasync: %w", err)
			}
		}
	}
	if !each {
		if err := syscall.Fdatasync(fd); err != nil {
			return 0, fmt.Errorf("disk test: fdatasync: %w", err)
		}
	}
	return float64(mib) * float64(len(block)) / time.Since(start).Seconds() / 1e6, nil
}

// small4KSyncs appends 4 KiB writes, each followed by fdatasync, for about
// d, and returns how many it made per second.
func small4KSyncs(dir string, page []byte, d time.Duration) (float64, error) {
	f, err := os.CreateTemp(dir, "disksync-")
	if err != nil {
		return 0, fmt.Errorf("disk test: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fd := int(f.Fd())
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		if _, err := f.Write(page); err != nil {
			return 0, fmt.Errorf("disk test: %w", err)
		}
		if err := syscall.Fdatasync(fd); err != nil {
			return 0, fmt.Errorf("disk test: fdatasync: %w", err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
