package repository

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The read side of the stream's framing: streamReader keeps the closing
// CRC32C of everything but the payloads, fields splits a record's body.

// streamReader reads the stream, keeping the closing CRC of the framing.
type streamReader struct {
	r   *bufio.Reader
	crc uint32
	err error
}

func (s *streamReader) framed(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.err = err
		return
	}
	s.crc = crc32.Update(s.crc, castagnoli, b)
}

func (s *streamReader) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s.r)
	if err != nil {
		s.err = err
		return 0
	}
	s.crc = crc32.Update(s.crc, castagnoli, binary.AppendUvarint(nil, v))
	return v
}

// fields splits a record body into its uvarint-prefixed fields and
// fixed-size integers, refusing a body that does not parse.
type fields struct {
	b   []byte
	err error
}

func (f *fields) next() []byte {
	n, k := binary.Uvarint(f.b)
	if f.err != nil || k <= 0 || n > uint64(len(f.b)-k) {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return nil
	}
	v := f.b[k : k+int(n)]
	f.b = f.b[k+int(n):]
	return v
}

func (f *fields) u64() uint64 {
	if f.err != nil || len(f.b) < 8 {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return 0
	}
	v := binary.BigEndian.Uint64(f.b)
	f.b = f.b[8:]
	return v
}

func (f *fields) count() uint64 {
	n, k := binary.Uvarint(f.b)
	if f.err != nil || k <= 0 {
		f.err = fmt.Errorf("%w: snapshot stream: malformed record", ErrFormat)
		return 0
	}
	f.b = f.b[k:]
	return n
}

func (f *fields) done() error {
	if f.err == nil && len(f.b) != 0 {
		f.err = fmt.Errorf("%w: snapshot stream: %d bytes left in a record", ErrFormat, len(f.b))
	}
	return f.err
}
