package chunkpipe

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// Everything written arrives in order, whatever the sizes of the writes
// and reads, then io.EOF.
func TestBytesArriveInOrder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		chunk, ahead int
	}{
		{"small chunks", 7, 1},
		{"one chunk ahead", 4096, 1},
		{"several ahead", 1 << 16, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := make([]byte, 1<<20)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range want {
				want[i] = byte(rng.Uint32())
			}
			r, w := Pipe(tc.chunk, tc.ahead)
			go func() {
				rest := want
				for len(rest) > 0 {
					n := min(len(rest), 1+rng.IntN(3*tc.chunk))
					if _, err := w.Write(rest[:n]); err != nil {
						w.CloseWithError(err)
						return
					}
					rest = rest[n:]
				}
				w.Close()
			}()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
			}
		})
	}
}

// The writer runs ahead of a reader that is not reading, by its buffer and
// no more; a writer's error reaches the reader after what came before it.
func TestWriterRunsAheadAndErrorsArrive(t *testing.T) {
	r, w := Pipe(10, 2)
	wrote := make(chan int, 1)
	go func() {
		n, _ := w.Write(make([]byte, 100))
		wrote <- n
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case n := <-wrote:
		t.Fatalf("a write of 100 bytes into a 30-byte pipe returned (%d) with nothing read", n)
	default:
	}
	if n, err := io.ReadFull(r, make([]byte, 100)); err != nil || n != 100 {
		t.Fatalf("read %d: %v", n, err)
	}
	if n := <-wrote; n != 100 {
		t.Fatalf("wrote %d", n)
	}
	boom := errors.New("boom")
	w.Write([]byte("0123456789"))
	w.CloseWithError(boom)
	got, err := io.ReadAll(r)
	if !errors.Is(err, boom) || string(got) != "0123456789" {
		t.Fatalf("after CloseWithError read %q, %v; want the full chunk, then boom", got, err)
	}
}

// A reader that closes unblocks a writer waiting on it, and every later
// write fails with the reader's error.
func TestReaderCloseStopsTheWriter(t *testing.T) {
	r, w := Pipe(4, 1)
	failed := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, 64))
		failed <- err
	}()
	time.Sleep(20 * time.Millisecond)
	gone := errors.New("reader gone")
	r.CloseWithError(gone)
	select {
	case err := <-failed:
		if !errors.Is(err, gone) {
			t.Fatalf("blocked write failed with %v, want the reader's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write stayed blocked after the reader closed")
	}
	if _, err := w.Write(make([]byte, 4)); !errors.Is(err, gone) {
		t.Fatalf("write after the reader closed: %v", err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("read after the reader closed: %v", err)
	}
}
