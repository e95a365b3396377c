package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"umstore/receiver"
)

// sink prints messages to stdout. For a durable receiver it acknowledges a
// message only once its line left the buffer, so a crash never loses a
// message that was acknowledged: what a crash loses from the buffer is
// printed again by the next run.
type sink struct {
	out     *bufio.Writer
	r       *receiver.Receiver
	durable bool
	json    bool

	written uint64    // the last sequence number written to the buffer
	flushed time.Time // when the buffer was last flushed
}

// sinkFlushEvery bounds how long a printed line waits in the buffer (and
// so its acknowledgement) when reading without --follow.
const (
	sinkFlushEvery = 50 * time.Millisecond
	sinkFlushBytes = 32 << 10
)

func newSink(w io.Writer, r *receiver.Receiver, durable, asJSON bool) *sink {
	return &sink{out: bufio.NewWriterSize(w, 64<<10), r: r, durable: durable, json: asJSON, flushed: time.Now()}
}

// print writes m, flushing (and acknowledging) now and then.
func (s *sink) print(m receiver.Message) error {
	if err := s.write(m); err != nil {
		return err
	}
	if s.out.Buffered() >= sinkFlushBytes || time.Since(s.flushed) >= sinkFlushEvery {
		return s.flush()
	}
	return nil
}

// printFlushed writes m and flushes at once (--follow).
func (s *sink) printFlushed(m receiver.Message) error {
	if err := s.write(m); err != nil {
		return err
	}
	return s.flush()
}

func (s *sink) write(m receiver.Message) error {
	if s.json {
		b, _ := json.Marshal(struct {
			Seq     uint64 `json:"seq"`
			Payload []byte `json:"payload"`
		}{m.Seq, m.Payload})
		s.out.Write(b)
		if err := s.out.WriteByte('\n'); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(s.out, "%d %s\n", m.Seq, showPayload(m.Payload)); err != nil {
		return err
	}
	s.written = m.Seq
	return nil
}

// flush writes the buffer out and acknowledges what it held.
func (s *sink) flush() error {
	s.flushed = time.Now()
	if err := s.out.Flush(); err != nil {
		return err
	}
	if s.durable && s.written > 0 {
		return s.r.Ack(s.written)
	}
	return nil
}
