package main

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// compressedRatio is the size flate's best compression makes of b, over len(b).
func compressedRatio(t *testing.T, b []byte) float64 {
	t.Helper()
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return float64(out.Len()) / float64(len(b))
}

// TestPayloadsCompress checks what the goal table asks of the payloads:
// the random ones do not compress, the text ones of earlier runs do (so the
// check can tell them apart).
func TestPayloadsCompress(t *testing.T) {
	f := newRandomFiller(1, 2)
	for _, tc := range []struct {
		name    string
		make    func(size int, i uint64) []byte
		atLeast float64 // compressed size / size must be at least this
		atMost  float64 // ... and at most this
	}{
		// The 8-byte index (mostly zero bytes) is the compressible part.
		{"js random", func(size int, i uint64) []byte { return jsPayload(f, size, i) }, 0.9, 1.01},
		{"js text", func(size int, i uint64) []byte { return jsPayload(nil, size, i) }, 0, 0.1},
		{"umpub line", func(size int, _ uint64) []byte { b := make([]byte, size); f.fillLine(b); return b }, 0.99, 1.01},
	} {
		for _, size := range []int{64, 1024} {
			var all []byte
			for i := uint64(0); i < 512; i++ {
				all = append(all, tc.make(size, i)...)
			}
			if r := compressedRatio(t, all); r < tc.atLeast || r > tc.atMost {
				t.Errorf("%s %d B: 512 messages compress to %.3f of their size, want %.2f..%.2f", tc.name, size, r, tc.atLeast, tc.atMost)
			}
		}
	}
}

func TestJSPayloadCarriesIndex(t *testing.T) {
	for _, f := range []*randomFiller{nil, newRandomFiller(3, 4)} {
		for _, size := range []int{8, 9, 64, 1023} {
			b := jsPayload(f, size, 123456789)
			if len(b) != size || binary.BigEndian.Uint64(b) != 123456789 {
				t.Errorf("jsPayload(%d) = %d bytes, index %d", size, len(b), binary.BigEndian.Uint64(b))
			}
		}
	}
}

// TestFeedLines checks that umpub --stdin reads exactly count messages of
// exactly size bytes from what the bench writes: no byte of a payload ends
// a line.
func TestFeedLines(t *testing.T) {
	for _, size := range []int{8, 63, 64, 1024} {
		var buf bytes.Buffer
		n, err := feedLines(context.Background(), &buf, newRandomFiller(5, uint64(size)), size, 3000, time.Time{}, nil)
		if err != nil || n != 3000 {
			t.Fatalf("feedLines = %d, %v", n, err)
		}
		sc := bufio.NewScanner(&buf) // as umpub reads --stdin
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		lines := 0
		for sc.Scan() {
			if len(sc.Bytes()) != size {
				t.Fatalf("%d B: line %d has %d bytes", size, lines, len(sc.Bytes()))
			}
			lines++
		}
		if lines != 3000 {
			t.Fatalf("%d B: %d lines, want 3000", size, lines)
		}
	}
}

func TestFeedLinesStopsAtDeadline(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	n, err := feedLines(context.Background(), &buf, newRandomFiller(6, 7), 64, -1, start.Add(50*time.Millisecond), nil)
	if err != nil || n == 0 {
		t.Fatalf("feedLines = %d, %v", n, err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("feedLines with a 50 ms deadline took %v", el)
	}
	if buf.Len() != n*65 {
		t.Fatalf("wrote %d bytes for %d lines of 64 B", buf.Len(), n)
	}
}

func TestFeedLinesStops(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	var buf bytes.Buffer
	n, err := feedLines(context.Background(), &buf, nil, 16, -1, time.Time{}, stop)
	if err != nil || n > 64 || buf.Len() != n*17 {
		t.Fatalf("feedLines after stop = %d lines (%d bytes), %v", n, buf.Len(), err)
	}
	if n > 0 && !bytes.HasPrefix(buf.Bytes(), []byte("................\n")) {
		t.Fatalf("text lines: %q", buf.Bytes()[:17])
	}
}
