package main

import (
	"os"
	"testing"
)

func TestParseProcMem(t *testing.T) {
	in := "Name:\tumstored\nVmPeak:\t 4000000 kB\nVmHWM:\t  300000 kB\nVmRSS:\t  200000 kB\nRssAnon:\t  150000 kB\nRssFile:\t   50000 kB\nThreads:\t12\n"
	m := parseProcMem(in)
	want := procMem{RSSMB: 204.8, PeakMB: 307.2, AnonMB: 153.6, FileMB: 51.2}
	if m != want {
		t.Fatalf("parseProcMem = %+v, want %+v", m, want)
	}
	if s := m.add(m); s.RSSMB != 409.6 || s.FileMB != 102.4 {
		t.Fatalf("add = %+v", s)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if self := readProcMem("self"); self.RSSMB <= 0 || self.PeakMB < self.RSSMB {
			t.Fatalf("readProcMem(self) = %+v", self)
		}
	}
}

func TestReadProcIOs(t *testing.T) {
	if got := readProcIOs(); got.WriteBytes >= 0 || got.CPUTicks >= 0 {
		t.Fatalf("readProcIOs() = %+v, want unread", got)
	}
	if got := readProcIOs("self", "no-such-process"); got.WriteBytes >= 0 || got.CPUTicks >= 0 {
		t.Fatalf("readProcIOs with a missing process = %+v, want unread", got)
	}
	one := readProcIO("self")
	if one.WriteBytes < 0 {
		t.Skip("/proc/self/io not readable here")
	}
	two := readProcIOs("self", "self")
	if two.WriteBytes < 2*one.WriteBytes || two.CPUTicks < 2*one.CPUTicks {
		t.Fatalf("readProcIOs(self, self) = %+v, want at least twice %+v", two, one)
	}
}
