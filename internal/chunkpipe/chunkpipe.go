// Package chunkpipe is an in-memory pipe with a buffer of its own, so that
// the goroutine writing a stream and the one reading it run side by side.
//
// io.Pipe hands each write straight to a read: the writer waits until the
// reader has taken all of it, so two goroutines joined by it take turns
// rather than overlap. A snapshot stream crosses two of them (the leader's
// repository to raft's connection, raft's connection to the member's new
// repository file), and with io.Pipe each side of each spent more than half
// its time waiting for the other. A chunkpipe collects writes into chunks
// and passes up to a few full chunks ahead, so the writer is held back only
// when the reader is that far behind.
package chunkpipe

import (
	"io"
	"sync"
)

// ErrClosedPipe is returned by Write after the reader closed the pipe
// (without an error of its own) and by Write after CloseWithError.
var ErrClosedPipe = io.ErrClosedPipe

// Pipe returns the two ends of a pipe that buffers up to ahead chunks of
// chunkSize bytes beyond the one being filled.
func Pipe(chunkSize, ahead int) (*Reader, *Writer) {
	s := &shared{
		chunks: make(chan []byte, ahead),
		done:   make(chan struct{}),
		free:   sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }},
	}
	return &Reader{s: s}, &Writer{s: s, size: chunkSize}
}

type shared struct {
	chunks chan []byte   // full chunks, in order; closed by the writer's Close
	done   chan struct{} // closed by the reader's Close: writes fail
	once   sync.Once     // closes done
	free   sync.Pool     // chunk buffers the reader is done with

	mu   sync.Mutex
	werr error // what the writer closed with (io.EOF for Close)
	rerr error // what the reader closed with
}

func (s *shared) writerErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

func (s *shared) readerErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rerr
}

// Writer is the write end. It is for one goroutine.
type Writer struct {
	s      *shared
	size   int
	cur    []byte
	closed bool
}

// Write copies p into the pipe, blocking only while the reader is the
// pipe's whole buffer behind. It fails once the reader has closed.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosedPipe
	}
	n := 0
	for len(p) > 0 {
		if w.cur == nil {
			w.cur = (*w.s.free.Get().(*[]byte))[:0]
		}
		k := min(len(p), w.size-len(w.cur))
		w.cur = append(w.cur, p[:k]...)
		p, n = p[k:], n+k
		if len(w.cur) == w.size {
			if err := w.send(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (w *Writer) send() error {
	c := w.cur
	w.cur = nil
	select {
	case <-w.s.done: // the reader is gone: fail now, not once the buffer is full
		return w.s.closedErr()
	default:
	}
	select {
	case w.s.chunks <- c:
		return nil
	case <-w.s.done:
		return w.s.closedErr()
	}
}

// closedErr is what a write fails with once the reader closed.
func (s *shared) closedErr() error {
	if err := s.readerErr(); err != nil {
		return err
	}
	return ErrClosedPipe
}

// Close passes on what is buffered, then the reader gets io.EOF after it.
func (w *Writer) Close() error { return w.CloseWithError(nil) }

// CloseWithError ends the stream: with err nil, the reader reads what was
// written and then io.EOF; with an error, the reader gets err as soon as
// it has read the chunks already passed on (what is being filled is
// dropped). Only the first close counts.
func (w *Writer) CloseWithError(err error) error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err == nil && len(w.cur) > 0 {
		if serr := w.send(); serr != nil {
			err = serr
		}
	}
	w.s.mu.Lock()
	if err == nil {
		w.s.werr = io.EOF
	} else {
		w.s.werr = err
	}
	w.s.mu.Unlock()
	close(w.s.chunks)
	return nil
}

// Reader is the read end. It is for one goroutine.
type Reader struct {
	s   *shared
	cur []byte // what is left of the chunk being read
	buf *[]byte
}

// Read reads from the chunks in order; after the writer's Close, io.EOF,
// or the error it closed with.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.cur) == 0 {
		if err := r.s.readerErr(); err != nil {
			return 0, io.ErrClosedPipe
		}
		if r.buf != nil {
			r.s.free.Put(r.buf)
			r.buf = nil
		}
		c, ok := <-r.s.chunks
		if !ok {
			return 0, r.s.writerErr()
		}
		r.cur, r.buf = c, &c
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close makes the writer's Write fail with io.ErrClosedPipe.
func (r *Reader) Close() error { return r.CloseWithError(nil) }

// CloseWithError makes the writer's Write fail with err (io.ErrClosedPipe
// when nil). The chunks the writer already passed on are dropped.
func (r *Reader) CloseWithError(err error) error {
	if err == nil {
		err = io.ErrClosedPipe
	}
	r.s.mu.Lock()
	if r.s.rerr == nil {
		r.s.rerr = err
	}
	r.s.mu.Unlock()
	r.s.once.Do(func() { close(r.s.done) })
	return nil
}
