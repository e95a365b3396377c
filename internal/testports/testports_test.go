package testports

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// childEnv marks a run of this test binary as a child of
// TestProcessesNeverShareAPort.
const childEnv = "UMSTORE_TESTPORTS_CHILD"

// childPorts is how many ports each process takes: more than a block, so
// that each claims at least two.
const childPorts = blockSize + 50

// planned is the planner's raft, client and admin offsets, as e2e asks.
var planned = []int{11, 12, 13, 21, 22, 23, 1011, 1012, 1013, 1021, 1022, 1023, 2000}

// takePorts takes childPorts ports and one planned base from a, and lists
// every port given.
func takePorts(t *testing.T, a *allocator) []int {
	t.Helper()
	var got []int
	for range childPorts {
		p, err := a.port("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	base, err := a.base([]string{"127.0.0.1"}, planned)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range planned {
		got = append(got, base+off)
	}
	return got
}

// Two test processes running at once, and this one beside them, are never
// given the same port, even when every one of them starts at the same
// block: the child processes are this test binary run again, they print
// their ports and hold their blocks until the parent closes their stdin.
func TestProcessesNeverShareAPort(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir != "" {
		// The child: the same pid-derived start as its siblings, so that
		// they all contend for the same blocks.
		a := newAllocator(dir, ephemeralStart(), 0)
		for _, p := range takePorts(t, a) {
			fmt.Println("port", p)
		}
		fmt.Println("done")
		bufio.NewReader(os.Stdin).ReadString('\n') // hold the blocks until the parent lets go
		return
	}

	dir = t.TempDir()
	owner := map[int]string{}
	claim := func(who string, ports []int) {
		for _, p := range ports {
			if prev, ok := owner[p]; ok {
				t.Errorf("port %d given to %s and to %s", p, prev, who)
			}
			owner[p] = who
		}
	}
	for i := range 2 {
		who := fmt.Sprintf("child %d", i+1)
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessesNeverShareAPort$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+dir)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		var ports []int
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if line == "done" {
				break
			}
			if s, ok := strings.CutPrefix(line, "port "); ok {
				p, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("%s printed %q", who, line)
				}
				ports = append(ports, p)
			}
		}
		if len(ports) != childPorts+len(planned) {
			t.Fatalf("%s gave %d ports, want %d", who, len(ports), childPorts+len(planned))
		}
		claim(who, ports)
	}
	// Both children still hold their blocks; this process asks the same
	// lock folder from the same start.
	claim("the parent", takePorts(t, newAllocator(dir, ephemeralStart(), 0)))
	if len(owner) != 3*(childPorts+len(planned)) {
		t.Errorf("%d distinct ports, want %d", len(owner), 3*(childPorts+len(planned)))
	}
}

// A block of a process that ended is free again: the kernel released its
// lock.
func TestBlocksOfAnEndedProcessAreFreeAgain(t *testing.T) {
	dir := t.TempDir()
	a := newAllocator(dir, ephemeralStart(), 0)
	first, err := a.port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.held { // as the process's end would
		f.Close()
	}
	b := newAllocator(dir, ephemeralStart(), 0)
	again, err := b.port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if again/blockSize != first/blockSize {
		t.Errorf("the released block of %d was not claimed again (got %d)", first, again)
	}
}

// Ports come in order from a block, skip one that something else holds,
// and stay below the ephemeral range.
func TestPortsInOrderBelowTheEphemeralRange(t *testing.T) {
	a := newAllocator(t.TempDir(), ephemeralStart(), 0)
	p1, err := a.port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := a.port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if p2 <= p1 || p1 < floor || p2 >= ephemeralStart() {
		t.Errorf("ports %d then %d, want increasing in [%d, %d)", p1, p2, floor, ephemeralStart())
	}
	if Port(t) >= ephemeralStart() {
		t.Errorf("Port is in the ephemeral range")
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), lockDirName)); err != nil {
		t.Errorf("no lock folder: %v", err)
	}
}

// Base's ports land where the offsets say, are given once, and are not
// handed out by Port after.
func TestBaseOwnsItsBlocks(t *testing.T) {
	a := newAllocator(t.TempDir(), ephemeralStart(), 0)
	base, err := a.base([]string{"127.0.0.1"}, planned)
	if err != nil {
		t.Fatal(err)
	}
	if (base-floor)%blockSize != 0 {
		t.Errorf("base %d is not a block's start", base)
	}
	for range 3 * blockSize {
		p, err := a.port("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p >= base && p <= base+2000 && (p-base)/blockSize%10 == 0 {
			t.Fatalf("Port handed out %d, in a block of base %d", p, base)
		}
	}
}
