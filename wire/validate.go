package wire

import (
	"encoding/binary"
	"fmt"
)

// maxDepth bounds how deeply arrays and maps may nest in a frame body. The
// protocol's messages nest three levels; the bound keeps a hostile frame
// from driving the decoder into deep recursion.
const maxDepth = 16

// checkBody walks a msgpack body without decoding it and refuses one whose
// declared lengths exceed the bytes present or whose nesting is too deep.
// The msgpack library sizes slices from the declared length (its allocation
// limit does not apply to slices in v5.4.1), so without this check a
// 10-byte frame claiming a 4-billion-element array would exhaust memory.
func checkBody(b []byte) error {
	// pending[i] is how many values are still expected at depth i.
	pending := make([]uint64, 1, 8)
	pending[0] = 1
	pos := 0
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
		if pos >= len(b) {
			return fmt.Errorf("%w: body ends inside a value", ErrMalformed)
		}
		var skip, items uint64
		var err error
		if pos, skip, items, err = header(b, pos); err != nil {
			return err
		}
		rest := uint64(len(b) - pos)
		if skip > rest {
			return fmt.Errorf("%w: a value claims %d bytes, %d remain", ErrMalformed, skip, rest)
		}
		pos += int(skip)
		if items > 0 {
			// Every element takes at least one byte.
			if items > uint64(len(b)-pos) {
				return fmt.Errorf("%w: a collection claims %d elements, %d bytes remain", ErrMalformed, items, len(b)-pos)
			}
			if len(pending) >= maxDepth {
				return fmt.Errorf("%w: nesting deeper than %d", ErrMalformed, maxDepth)
			}
			pending = append(pending, items)
		}
	}
	return nil
}

// header reads the msgpack type byte at pos and the length after it, if
// any: skip is how many bytes of data follow the header, items how many
// values a collection holds (a map's keys and values both count).
func header(b []byte, pos int) (next int, skip, items uint64, err error) {
	if pos >= len(b) {
		return 0, 0, 0, fmt.Errorf("%w: body ends inside a value", ErrMalformed)
	}
	c := b[pos]
	pos++
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c >= 0x80 && c <= 0x8f:
		items = 2 * uint64(c&0x0f)
	case c >= 0x90 && c <= 0x9f:
		items = uint64(c & 0x0f)
	case c >= 0xa0 && c <= 0xbf:
		skip = uint64(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		skip, pos, err = readLen(b, pos, 1)
	case c == 0xc5 || c == 0xda:
		skip, pos, err = readLen(b, pos, 2)
	case c == 0xc6 || c == 0xdb:
		skip, pos, err = readLen(b, pos, 4)
	case c == 0xc7:
		skip, pos, err = readLen(b, pos, 1)
		skip++
	case c == 0xc8:
		skip, pos, err = readLen(b, pos, 2)
		skip++
	case c == 0xc9:
		skip, pos, err = readLen(b, pos, 4)
		skip++
	case c == 0xca:
		skip = 4
	case c == 0xcb:
		skip = 8
	case c == 0xcc || c == 0xd0:
		skip = 1
	case c == 0xcd || c == 0xd1:
		skip = 2
	case c == 0xce || c == 0xd2:
		skip = 4
	case c == 0xcf || c == 0xd3:
		skip = 8
	case c >= 0xd4 && c <= 0xd8:
		skip = 1 + 1<<(c-0xd4)
	case c == 0xdc:
		items, pos, err = readLen(b, pos, 2)
	case c == 0xdd:
		items, pos, err = readLen(b, pos, 4)
	case c == 0xde:
		items, pos, err = readLen(b, pos, 2)
		items *= 2
	case c == 0xdf:
		items, pos, err = readLen(b, pos, 4)
		items *= 2
	default:
		return 0, 0, 0, fmt.Errorf("%w: invalid msgpack byte 0x%02x", ErrMalformed, c)
	}
	return pos, skip, items, err
}

func readLen(b []byte, pos, size int) (uint64, int, error) {
	if len(b)-pos < size {
		return 0, pos, fmt.Errorf("%w: body ends inside a length", ErrMalformed)
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(b[pos])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[pos:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[pos:]))
	}
	return n, pos + size, nil
}
