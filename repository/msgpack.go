package repository

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file holds the few msgpack primitives the command bodies need. The
// bodies are ordinary msgpack (any msgpack library reads and writes them; the
// tests check this against vmihailenco/msgpack), but hand-written code lets
// EncodePublish size its output exactly and allocate once, and lets
// DecodeCommand hand out payloads that alias the entry instead of copying
// every message.

// msgpack format codes used below.
const (
	mpNil     = 0xc0
	mpBin8    = 0xc4
	mpBin16   = 0xc5
	mpBin32   = 0xc6
	mpUint8   = 0xcc
	mpUint16  = 0xcd
	mpUint32  = 0xce
	mpUint64  = 0xcf
	mpInt8    = 0xd0
	mpInt16   = 0xd1
	mpInt32   = 0xd2
	mpInt64   = 0xd3
	mpStr8    = 0xd9
	mpStr16   = 0xda
	mpStr32   = 0xdb
	mpArray16 = 0xdc
	mpArray32 = 0xdd
	mpMap16   = 0xde
	mpMap32   = 0xdf
)

// sizeArrayLen and appendArrayLen encode an array header of n elements;
// sizeMapLen and appendMapLen a map header of n key-value pairs. Both
// headers have the same three sizes.
func sizeArrayLen(n int) int { return sizeHeader(n) }

func appendArrayLen(b []byte, n int) []byte { return appendHeader(b, n, 0x90, mpArray16, mpArray32) }

func sizeMapLen(n int) int { return sizeHeader(n) }

func appendMapLen(b []byte, n int) []byte { return appendHeader(b, n, 0x80, mpMap16, mpMap32) }

// sizeHeader is the size of an array or map header of n.
func sizeHeader(n int) int {
	switch {
	case n < 16:
		return 1
	case n <= math.MaxUint16:
		return 3
	default:
		return 5
	}
}

// appendHeader appends an array or map header of n: fix (the fix format's
// high bits) for n < 16, else the 16- or 32-bit format.
func appendHeader(b []byte, n int, fix, f16, f32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, f16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, f32), uint32(n))
	}
}

func sizeString(n int) int {
	switch {
	case n < 32:
		return 1 + n
	case n <= math.MaxUint8:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	default:
		return 5 + n
	}
}

func appendString(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, mpStr8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpStr16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpStr32), uint32(n))
	}
	return append(b, s...)
}

func sizeBin(n int) int {
	switch {
	case n <= math.MaxUint8:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	default:
		return 5 + n
	}
}

func appendBin(b []byte, p []byte) []byte {
	n := len(p)
	switch {
	case n <= math.MaxUint8:
		b = append(b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpBin16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpBin32), uint32(n))
	}
	return append(b, p...)
}

func sizeUint(v uint64) int {
	switch {
	case v < 128:
		return 1
	case v <= math.MaxUint8:
		return 2
	case v <= math.MaxUint16:
		return 3
	case v <= math.MaxUint32:
		return 5
	default:
		return 9
	}
}

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, mpUint16), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, mpUint32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, mpUint64), v)
	}
}

func sizeInt(v int64) int {
	if v >= 0 {
		return sizeUint(uint64(v))
	}
	switch {
	case v >= -32:
		return 1
	case v >= math.MinInt8:
		return 2
	case v >= math.MinInt16:
		return 3
	case v >= math.MinInt32:
		return 5
	default:
		return 9
	}
}

func appendInt(b []byte, v int64) []byte {
	if v >= 0 {
		return appendUint(b, uint64(v))
	}
	switch {
	case v >= -32:
		return append(b, byte(v))
	case v >= math.MinInt8:
		return append(b, mpInt8, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, mpInt16), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, mpInt32), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, mpInt64), uint64(v))
	}
}

// mpReader decodes msgpack values from a byte slice. The first error sticks:
// later calls return zero values, so a decoder can read every field and check
// err once at the end. Lengths are checked against the bytes that remain
// before anything is allocated, so hostile input cannot make it allocate more
// than the input's size.
type mpReader struct {
	b   []byte
	off int
	err error
}

func (r *mpReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *mpReader) remaining() int { return len(r.b) - r.off }

func (r *mpReader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end of data")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// fixed returns the next n bytes (n ≤ 8) without copying.
func (r *mpReader) fixed(n int) []byte {
	if r.err != nil {
		return nil
	}
	if r.remaining() < n {
		r.fail("unexpected end of data")
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *mpReader) be(n int) uint64 {
	p := r.fixed(n)
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v
}

// arrayLen reads an array header. Every element takes at least one byte, so
// a length beyond the remaining bytes is refused at once.
func (r *mpReader) arrayLen() int {
	c := r.byte1()
	var n uint64
	switch {
	case r.err != nil:
		return 0
	case c&0xf0 == 0x90:
		n = uint64(c & 0x0f)
	case c == mpArray16:
		n = r.be(2)
	case c == mpArray32:
		n = r.be(4)
	default:
		r.fail("expected an array, found code 0x%02x", c)
		return 0
	}
	if n > uint64(r.remaining()) {
		r.fail("array of %d elements is longer than the data", n)
		return 0
	}
	return int(n)
}

// mapLen reads a map header. Every pair takes at least two bytes, so a
// length beyond the remaining bytes is refused at once.
func (r *mpReader) mapLen() int {
	c := r.byte1()
	var n uint64
	switch {
	case r.err != nil:
		return 0
	case c&0xf0 == 0x80:
		n = uint64(c & 0x0f)
	case c == mpMap16:
		n = r.be(2)
	case c == mpMap32:
		n = r.be(4)
	default:
		r.fail("expected a map, found code 0x%02x", c)
		return 0
	}
	if n > uint64(r.remaining())/2 {
		r.fail("map of %d pairs is longer than the data", n)
		return 0
	}
	return int(n)
}

// maxSkipDepth bounds the nesting skip follows, so hostile input cannot
// exhaust the stack.
const maxSkipDepth = 16

// skip reads past one msgpack value of any kind: an advisory field's value,
// which this version does not interpret.
func (r *mpReader) skip() { r.skipDepth(0) }

func (r *mpReader) skipDepth(depth int) {
	if depth > maxSkipDepth {
		r.fail("value nested deeper than %d", maxSkipDepth)
		return
	}
	if r.err != nil || r.off >= len(r.b) {
		r.byte1() // fails at the end of the data
		return
	}
	c := r.b[r.off]
	var n uint64 // elements to skip after the header (maps: twice the pairs)
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= mpUint8 && c <= mpInt64):
		r.integer()
		return
	case c == mpNil || c == mpFalse || c == mpTrue:
		r.off++
		return
	case c&0xe0 == 0xa0 || (c >= mpBin8 && c <= mpBin32) || (c >= mpStr8 && c <= mpStr32):
		r.raw()
		return
	case c == 0xca: // float32
		r.off++
		r.fixed(4)
		return
	case c == 0xcb: // float64
		r.off++
		r.fixed(8)
		return
	case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type byte and data
		r.off++
		r.fixed(1)
		r.skipBytes(uint64(1) << (c - 0xd4))
		return
	case c >= 0xc7 && c <= 0xc9: // ext 8, 16, 32: length, type byte, data
		r.off++
		size := r.be(1 << (c - 0xc7))
		r.fixed(1)
		r.skipBytes(size)
		return
	case c&0xf0 == 0x90 || c == mpArray16 || c == mpArray32:
		n = uint64(r.arrayLen())
	case c&0xf0 == 0x80 || c == mpMap16 || c == mpMap32:
		n = 2 * uint64(r.mapLen())
	default:
		r.fail("unknown msgpack code 0x%02x", c)
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.skipDepth(depth + 1)
	}
}

// skipBytes reads past n bytes.
func (r *mpReader) skipBytes(n uint64) {
	if r.err != nil {
		return
	}
	if n > uint64(r.remaining()) {
		r.fail("value of %d bytes is longer than the data", n)
		return
	}
	r.off += int(n)
}

// raw reads a str, bin or nil value and returns its bytes, aliasing the input.
func (r *mpReader) raw() []byte {
	c := r.byte1()
	var n uint64
	switch {
	case r.err != nil:
		return nil
	case c == mpNil:
		return nil
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == mpStr8 || c == mpBin8:
		n = r.be(1)
	case c == mpStr16 || c == mpBin16:
		n = r.be(2)
	case c == mpStr32 || c == mpBin32:
		n = r.be(4)
	default:
		r.fail("expected a string or bytes, found code 0x%02x", c)
		return nil
	}
	if r.err != nil {
		return nil
	}
	if n > uint64(r.remaining()) {
		r.fail("value of %d bytes is longer than the data", n)
		return nil
	}
	p := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *mpReader) str() string { return string(r.raw()) }

// integer reads any msgpack integer; neg reports a negative value (then v
// holds it as int64 bits).
func (r *mpReader) integer() (v uint64, neg bool) {
	c := r.byte1()
	switch {
	case r.err != nil:
		return 0, false
	case c <= 0x7f:
		return uint64(c), false
	case c >= 0xe0:
		return uint64(int64(int8(c))), true
	}
	switch c {
	case mpUint8:
		return r.be(1), false
	case mpUint16:
		return r.be(2), false
	case mpUint32:
		return r.be(4), false
	case mpUint64:
		return r.be(8), false
	case mpInt8:
		s := int64(int8(r.be(1)))
		return uint64(s), s < 0
	case mpInt16:
		s := int64(int16(r.be(2)))
		return uint64(s), s < 0
	case mpInt32:
		s := int64(int32(r.be(4)))
		return uint64(s), s < 0
	case mpInt64:
		s := int64(r.be(8))
		return uint64(s), s < 0
	}
	r.fail("expected an integer, found code 0x%02x", c)
	return 0, false
}

func (r *mpReader) uint() uint64 {
	v, neg := r.integer()
	if neg {
		r.fail("negative value %d where an unsigned integer is expected", int64(v))
		return 0
	}
	return v
}

func (r *mpReader) int() int64 {
	v, neg := r.integer()
	if !neg && v > math.MaxInt64 {
		r.fail("value %d does not fit a signed 64-bit integer", v)
		return 0
	}
	return int64(v)
}

// end fails unless every byte was consumed: trailing data means the body is
// not what this version thinks it is.
func (r *mpReader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d unexpected trailing bytes", len(r.b)-r.off)
	}
}
