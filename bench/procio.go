package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// A process's writes to storage and its CPU time, from Linux's /proc. The
// bench reads them before and after every run to report the bytes a system
// writes to storage per byte of payload, and the CPU it spends on a run.
//
// write_bytes in /proc/PID/io counts the bytes the process caused to be
// sent to the storage layer: page-cache pages it dirtied (a whole 4 KiB page
// at the moment it becomes dirty, whether or not it reaches the device
// before the file is deleted; a page written out by an fsync and dirtied
// again by the next append counts again, as the device writes it again) and
// direct I/O. It sums every thread of the process. The filesystem's own
// journal and metadata writes (ext4's jbd2 thread) are not in it.

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, which
// sysconf(_SC_CLK_TCK) returns. It is part of Linux's ABI and 100 on every
// architecture Go runs Linux on, whatever the kernel's internal HZ (Go has
// no sysconf without cgo; `getconf CLK_TCK` shows it).
const userHZ = 100

// procIO is a process's counters at one moment; a counter that could not be
// read is negative.
type procIO struct {
	WriteBytes int64 // write_bytes in /proc/PID/io
	CPUTicks   int64 // utime + stime in /proc/PID/stat, in 1/userHZ s
}

// readProcIO reads the counters of process pid ("self" for the bench). It
// never fails: a counter /proc does not give (not Linux, no permission, the
// process has exited) is -1, and since then reports 0 for it.
func readProcIO(pid string) procIO {
	c := procIO{WriteBytes: -1, CPUTicks: -1}
	if b, err := os.ReadFile("/proc/" + pid + "/io"); err == nil {
		if n, err := parseWriteBytes(b); err == nil {
			c.WriteBytes = n
		}
	}
	if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
		if n, err := parseStatCPU(b); err == nil {
			c.CPUTicks = n
		}
	}
	return c
}

// since returns the storage writes and CPU seconds from before to c, each 0
// where either reading failed (the report shows "n/a" for 0).
func (c procIO) since(before procIO) (writeBytes int64, cpuSeconds float64) {
	if c.WriteBytes >= 0 && before.WriteBytes >= 0 && c.WriteBytes >= before.WriteBytes {
		writeBytes = c.WriteBytes - before.WriteBytes
	}
	if c.CPUTicks >= 0 && before.CPUTicks >= 0 && c.CPUTicks >= before.CPUTicks {
		cpuSeconds = float64(c.CPUTicks-before.CPUTicks) / userHZ
	}
	return writeBytes, cpuSeconds
}

// Settling after a run: the counters are read once write_bytes has not grown
// for settleQuiet, or after settleMax. Not every write of a run happens
// before its last acknowledgement (the replica outside the quorum, applying
// committed entries to the store, buffered writes flushed later), and the
// run should be charged with them rather than the next one.
const (
	settleQuiet = 250 * time.Millisecond
	settleMax   = 5 * time.Second
)

// readProcIOs is the sum of the counters of processes pids (the three
// umstored of a deployment on three hosts); a counter unread in any of
// them is unread in the sum.
func readProcIOs(pids ...string) procIO {
	sum := procIO{}
	for _, pid := range pids {
		c := readProcIO(pid)
		if c.WriteBytes < 0 || sum.WriteBytes < 0 {
			sum.WriteBytes = -1
		} else {
			sum.WriteBytes += c.WriteBytes
		}
		if c.CPUTicks < 0 || sum.CPUTicks < 0 {
			sum.CPUTicks = -1
		} else {
			sum.CPUTicks += c.CPUTicks
		}
	}
	if len(pids) == 0 {
		return procIO{WriteBytes: -1, CPUTicks: -1}
	}
	return sum
}

// settleProcIO waits until the write_bytes of pids (summed) has stopped
// growing (or settleMax, or ctx is done) and returns the counters then.
func settleProcIO(ctx context.Context, pids ...string) procIO {
	deadline := time.Now().Add(settleMax)
	c := readProcIOs(pids...)
	for c.WriteBytes >= 0 && time.Now().Before(deadline) {
		if sleepCtx(ctx, settleQuiet) != nil {
			break
		}
		next := readProcIOs(pids...)
		quiet := next.WriteBytes == c.WriteBytes
		c = next
		if quiet {
			break
		}
	}
	return c
}

// parseWriteBytes returns the write_bytes line of /proc/PID/io.
func parseWriteBytes(b []byte) (int64, error) {
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("write_bytes:")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, errors.New("no write_bytes in /proc/PID/io")
}

// parseStatCPU returns utime + stime (fields 14 and 15 of /proc/PID/stat)
// in clock ticks (1/userHZ s). Field 2, the command name in parentheses, may itself hold
// spaces and parentheses, so the fields are counted after its last ')'.
func parseStatCPU(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc/PID/stat: no command name")
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command name", len(f))
	}
	utime, err := strconv.ParseInt(string(f[14-3]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/PID/stat utime: %w", err)
	}
	stime, err := strconv.ParseInt(string(f[15-3]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/PID/stat stime: %w", err)
	}
	return utime + stime, nil
}

// pid is the process's id as /proc names it.
func (p *proc) pid() string { return strconv.Itoa(p.cmd.Process.Pid) }
