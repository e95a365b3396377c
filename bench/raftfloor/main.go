// Command raftfloor measures the least a raft commit costs on this machine,
// without raft: the floor under the fixed-rate latency table (BENCH.md).
// Each group: a leader and two followers, each with its own file on one
// disk. The leader batches what is due, appends it with fdatasync, sends it
// over loopback TCP to both followers (serial: after its own write, as
// hashicorp/raft does; parallel: while it writes, as NATS does), and a
// message is committed once the leader's write and one follower's are done.
// Latency is timed from when the message was due.
//
//	cd bench && go run ./raftfloor --groups 2 --rate 1000 --size 1024 --seconds 4 [--parallel]
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

func sleepUntil(due time.Time) {
	if d := time.Until(due) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	if d := time.Until(due); d >= 100*time.Microsecond {
		ts := syscall.NsecToTimespec(int64(d))
		syscall.Nanosleep(&ts, nil)
	}
}

type wfile struct{ f *os.File }

func openW(dir, name string) wfile {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		panic(err)
	}
	return wfile{f}
}
func (w wfile) append(b []byte) {
	if _, err := w.f.Write(b); err != nil {
		panic(err)
	}
	if err := syscall.Fdatasync(int(w.f.Fd())); err != nil {
		panic(err)
	}
}

// follower reads [index u64][len u32][bytes], writes and syncs, replies index.
func follower(ln net.Listener, w wfile) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	r := bufio.NewReaderSize(c, 1<<20)
	hdr := make([]byte, 12)
	out := make([]byte, 8)
	for {
		if _, err := readFull(r, hdr); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[8:])
		buf := make([]byte, n)
		if _, err := readFull(r, buf); err != nil {
			return
		}
		w.append(buf)
		copy(out, hdr[:8])
		c.Write(out)
	}
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

type group struct {
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []time.Time // due times waiting for the leader
	lat      []time.Duration
	parallel bool
}

func runGroup(dir string, gi int, size int, g *group) {
	lw := openW(dir, fmt.Sprintf("g%d-leader", gi))
	var conns []net.Conn
	for k := 0; k < 2; k++ {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		go follower(ln, openW(dir, fmt.Sprintf("g%d-f%d", gi, k)))
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			panic(err)
		}
		conns = append(conns, c)
	}
	// index -> due times of that batch; acks from followers
	var amu sync.Mutex
	batches := map[uint64][]time.Time{}
	leaderDone := map[uint64]bool{}
	followerDone := map[uint64]bool{}
	finish := func(idx uint64) {
		if leaderDone[idx] && followerDone[idx] {
			now := time.Now()
			g.mu.Lock()
			for _, d := range batches[idx] {
				g.lat = append(g.lat, now.Sub(d))
			}
			g.mu.Unlock()
			delete(batches, idx)
		}
	}
	for _, c := range conns {
		c := c
		go func() {
			b := make([]byte, 8)
			br := bufio.NewReader(c)
			for {
				if _, err := readFull(br, b); err != nil {
					return
				}
				idx := binary.BigEndian.Uint64(b)
				amu.Lock()
				if !followerDone[idx] {
					followerDone[idx] = true
					finish(idx)
				}
				amu.Unlock()
			}
		}()
	}
	var idx uint64
	for {
		g.mu.Lock()
		for len(g.queue) == 0 {
			g.cond.Wait()
		}
		due := g.queue
		g.queue = nil
		g.mu.Unlock()
		idx++
		payload := make([]byte, 12+size*len(due))
		binary.BigEndian.PutUint64(payload, idx)
		binary.BigEndian.PutUint32(payload[8:], uint32(size*len(due)))
		amu.Lock()
		batches[idx] = due
		amu.Unlock()
		send := func() {
			for _, c := range conns {
				c.Write(payload)
			}
		}
		if g.parallel {
			send()
			lw.append(payload[12:])
		} else {
			lw.append(payload[12:])
			send()
		}
		amu.Lock()
		leaderDone[idx] = true
		finish(idx)
		amu.Unlock()
	}
}

func main() {
	groups := flag.Int("groups", 2, "groups of three")
	rate := flag.Int("rate", 1000, "messages per second (each goes to every group)")
	size := flag.Int("size", 1024, "message bytes")
	secs := flag.Int("seconds", 5, "run length")
	parallel := flag.Bool("parallel", false, "leader writes while it replicates")
	dir := flag.String("dir", "", "directory (default a temp dir)")
	flag.Parse()
	d := *dir
	if d == "" {
		d, _ = os.MkdirTemp("", "floor")
		defer os.RemoveAll(d)
	}
	gs := make([]*group, *groups)
	for i := range gs {
		gs[i] = &group{parallel: *parallel}
		gs[i].cond = sync.NewCond(&gs[i].mu)
		go runGroup(d, i, *size, gs[i])
	}
	time.Sleep(200 * time.Millisecond)
	n := *rate * *secs
	start := time.Now().Add(10 * time.Millisecond)
	step := time.Second / time.Duration(*rate)
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(i) * step)
		sleepUntil(due)
		for _, g := range gs {
			g.mu.Lock()
			g.queue = append(g.queue, due)
			g.cond.Signal()
			g.mu.Unlock()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		total := 0
		for _, g := range gs {
			g.mu.Lock()
			total += len(g.lat)
			g.mu.Unlock()
		}
		if total >= n**groups || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var all []time.Duration
	for _, g := range gs {
		g.mu.Lock()
		all = append(all, g.lat...)
		g.mu.Unlock()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	mode := "serial"
	if *parallel {
		mode = "parallel"
	}
	fmt.Printf("%s groups=%d rate=%d size=%d n=%d p50=%.2f p90=%.2f p99=%.2f p99.9=%.2f ms\n", mode, *groups, *rate, *size, len(all), q(.5), q(.9), q(.99), q(.999))
}
