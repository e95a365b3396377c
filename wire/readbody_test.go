package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
)

// A peer that announces a frame at the limit and then sends almost nothing
// must not make the reader allocate the whole frame.
func TestAnnouncedFrameIsNotAllocatedBeforeItArrives(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		var hdr [headerLen]byte
		binary.BigEndian.PutUint32(hdr[:], DefaultMaxFrame)
		a.Write(hdr[:])
		a.Write(bytes.Repeat([]byte{1}, 100))
		a.Close()
	}()
	c := NewConn(b, DefaultMaxFrame)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Read()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read: %v, want unexpected EOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("reading 100 bytes of an announced %d-byte frame allocated %d bytes", DefaultMaxFrame, grew)
	}
}

// Frames larger than one read chunk still arrive whole and intact.
func TestLargeFrameReadInChunks(t *testing.T) {
	payload := make([]byte, 3*readChunk+17)
	for i := range payload {
		payload[i] = byte(i)
	}
	frame, err := Encode(&Publish{ReqID: 1, Source: "s", FirstSeq: 1, Payloads: [][]byte{payload}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	go func() { a.Write(frame); a.Write(frame) }()
	c := NewConn(b, DefaultMaxFrame)
	for i := 0; i < 2; i++ {
		m, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := m.(*Publish)
		if !ok || len(p.Payloads) != 1 || !bytes.Equal(p.Payloads[0], payload) {
			t.Fatalf("frame %d came back different", i)
		}
	}
}
