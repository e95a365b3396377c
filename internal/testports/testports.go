package testports

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const (
	// floor is the lowest port handed out: below it are the ports the
	// chaos suite and internal/devstores pick for themselves.
	floor = 19000
	// blockSize is how many ports a lock file covers. Blocks start at
	// floor + k*blockSize, so a base port of the planner's numbering
	// (base+10*group+store, base+1000+...) that is a block's start keeps
	// its ports at the same place in each block it spans.
	blockSize = 100
	// defaultCeiling is the ephemeral range's start when /proc does not
	// say (Linux's default).
	defaultCeiling = 32768
	// lockDirName is the folder under os.TempDir() that holds one lock
	// file per block.
	lockDirName = "umstore-testports"
)

// allocator is the process's claim on blocks and its place in the block
// that Port hands out from.
type allocator struct {
	mu      sync.Mutex
	dir     string
	ceiling int        // first port not handed out
	held    []*os.File // every block's lock file, open for the process's life
	next    int        // the next port Port tries
	end     int        // the end of the block Port hands out from
	given   map[int]bool
	first   int // the block index a claim starts looking at
}

var process = newAllocator(filepath.Join(os.TempDir(), lockDirName), ephemeralStart(), os.Getpid())

func newAllocator(dir string, ceiling, pid int) *allocator {
	a := &allocator{dir: dir, ceiling: ceiling, given: map[int]bool{}}
	if n := a.blocks(); n > 0 {
		a.first = pid % n
	}
	return a
}

// ephemeralStart reads the kernel's lowest ephemeral port.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultCeiling
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return defaultCeiling
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= floor {
		return defaultCeiling
	}
	return n
}

// blocks is how many whole blocks fit between floor and the ceiling.
func (a *allocator) blocks() int { return (a.ceiling - floor) / blockSize }

// Port returns a port on 127.0.0.1 that this process alone is given.
func Port(t testing.TB) int {
	t.Helper()
	p, err := process.port("127.0.0.1")
	if err != nil {
		t.Fatalf("testports: %v", err)
	}
	return p
}

// Addr returns "127.0.0.1:PORT" with a port from [Port].
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}

// Base returns a base port such that every base+offset (offsets from 0 to
// a few thousand, such as the planner's raft, client and admin ports) is
// this process's alone and bindable now on every address.
func Base(t testing.TB, addrs []string, offsets []int) int {
	t.Helper()
	b, err := process.base(addrs, offsets)
	if err != nil {
		t.Fatalf("testports: %v", err)
	}
	return b
}

func (a *allocator) port(addr string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if a.next >= a.end {
			start, err := a.claim()
			if err != nil {
				return 0, err
			}
			a.next, a.end = start, start+blockSize
		}
		p := a.next
		a.next++
		if a.given[p] || !bindable([]string{addr}, p) {
			continue
		}
		a.given[p] = true
		return p, nil
	}
}

func (a *allocator) base(addrs []string, offsets []int) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(offsets) == 0 {
		return 0, errors.New("a base with no offsets")
	}
	// The blocks base+offset falls in, counted from base's own block.
	var span []int
	for _, off := range offsets {
		if off < 0 {
			return 0, fmt.Errorf("offset %d is negative", off)
		}
		if k := off / blockSize; !slices.Contains(span, k) {
			span = append(span, k)
		}
	}
	widest := slices.Max(span)
	n := a.blocks()
	for i := range n {
		k := (a.first + i) % n
		if k+widest >= n {
			continue
		}
		files, ok := a.tryBlocks(k, span)
		if !ok {
			continue
		}
		base := floor + k*blockSize
		free := true
		for _, off := range offsets {
			if a.given[base+off] || !bindable(addrs, base+off) {
				free = false
				break
			}
		}
		if !free {
			// Keep the blocks claimed: a port of them is taken by
			// something outside, and Port must not hand them out either.
			a.held = append(a.held, files...)
			continue
		}
		a.held = append(a.held, files...)
		for _, off := range offsets {
			a.given[base+off] = true
		}
		return base, nil
	}
	return 0, fmt.Errorf("no run of free blocks for offsets %v between %d and %d (locks in %s)", offsets, floor, a.ceiling, a.dir)
}

// claim locks the next free block, starting at the process's own place,
// and returns its first port.
func (a *allocator) claim() (int, error) {
	n := a.blocks()
	for i := range n {
		k := (a.first + i) % n
		files, ok := a.tryBlocks(k, []int{0})
		if !ok {
			continue
		}
		a.held = append(a.held, files...)
		a.first = (k + 1) % n
		return floor + k*blockSize, nil
	}
	return 0, fmt.Errorf("every block of ports between %d and %d is held by other processes (locks in %s)", floor, a.ceiling, a.dir)
}

// tryBlocks locks block k+d for each d of span, all or none.
func (a *allocator) tryBlocks(k int, span []int) ([]*os.File, bool) {
	var files []*os.File
	for _, d := range span {
		f, err := a.lock(k + d)
		if err != nil {
			for _, f := range files {
				f.Close() // closing the file releases its lock
			}
			return nil, false
		}
		files = append(files, f)
	}
	return files, true
}

// lock takes the lock of block k without waiting. A block this process
// holds already is refused too: flock locks belong to the open file, so a
// second open of the same file conflicts with the first.
func (a *allocator) lock(k int) (*os.File, error) {
	if err := os.MkdirAll(a.dir, 0o777); err != nil {
		return nil, err
	}
	path := filepath.Join(a.dir, fmt.Sprintf("%d.lock", floor+k*blockSize))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// bindable reports whether port can be listened on at every address now.
func bindable(addrs []string, port int) bool {
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
