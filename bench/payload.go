package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// Payloads. The goal table asks for payloads that do not compress,
// so that neither system gains from a storage layer, file system or device
// that compresses or deduplicates: by default (--payload random) every
// message is fresh pseudo-random bytes on both sides. --payload text keeps
// the payloads of earlier reference runs (umpub's "SOURCE #SEQ ...." and
// JetStream's 8-byte index followed by dots), which compress about 50 to 1.
const (
	payloadRandom = "random"
	payloadText   = "text"
)

// randomFiller writes pseudo-random bytes: PCG, 8 bytes per step, about a
// nanosecond each, so filling 1 KiB costs some 150 ns, under 1% of a core
// at 60,000 msgs/s. Each publisher has its own, seeded differently, so no
// two messages of a run share their bytes.
type randomFiller struct{ r *rand.PCG }

func newRandomFiller(seed1, seed2 uint64) *randomFiller {
	return &randomFiller{r: rand.NewPCG(seed1, seed2)}
}

// fill overwrites b with random bytes.
func (f *randomFiller) fill(b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], f.r.Uint64())
	}
	if i < len(b) {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], f.r.Uint64())
		copy(b[i:], tail[:])
	}
}

// fillLine fills b with random bytes that are neither '\n' nor '\r', so that
// b followed by '\n' is one line of umpub --stdin (bufio.ScanLines ends a
// line at '\n' and drops a '\r' before it) carrying exactly len(b) bytes.
// The two values are mapped to others, which leaves log2(254) = 7.99 bits of
// entropy per byte: still incompressible.
func (f *randomFiller) fillLine(b []byte) {
	f.fill(b)
	for i, c := range b {
		switch c {
		case '\n':
			b[i] = 0x0b
		case '\r':
			b[i] = 0x0c
		}
	}
}

// jsPayload is the data of JetStream message i of a run: its index in the
// first 8 bytes (the ack handler finds the send time by it), then random
// bytes or dots.
func jsPayload(f *randomFiller, size int, i uint64) []byte {
	data := make([]byte, size) // size >= 8, checked in main
	if f != nil {
		f.fill(data[8:])
	} else {
		for j := 8; j < len(data); j++ {
			data[j] = '.'
		}
	}
	binary.BigEndian.PutUint64(data, i)
	return data
}

// feedLines writes umpub --stdin's input: count lines of size random bytes
// each (dots if f is nil; count < 0: no limit), or until the deadline when
// it is not zero, or until stop is closed (nil: never), then returns (the
// caller closes w, and umpub sends what it read and stops). It stops early
// when w fails: umpub has exited.
func feedLines(ctx context.Context, w io.Writer, f *randomFiller, size, count int, deadline time.Time, stop <-chan struct{}) (int, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	line := make([]byte, size+1)
	line[size] = '\n'
	if f == nil {
		for i := range size {
			line[i] = '.'
		}
	}
	n := 0
	for count < 0 || n < count {
		if n%64 == 0 {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				break
			}
			select {
			case <-stop:
				return n, bw.Flush()
			default:
			}
		}
		if f != nil {
			f.fillLine(line[:size])
		}
		if _, err := bw.Write(line); err != nil {
			return n, fmt.Errorf("feeding umpub: %w", err)
		}
		n++
	}
	return n, bw.Flush()
}
