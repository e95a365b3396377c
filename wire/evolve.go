package wire

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
)

// How frames grow without a new protocol version (docs/protocol.md,
// "Evolution"): a message's fields are only ever appended. A decoder
// ignores fields past the ones it knows and gives fields a shorter array
// lacks their zero value, at every level (a Msg inside a FetchReply
// too). So a newer peer's longer frames decode here, and this side's
// frames decode at an older peer that follows the same rule.
//
// The msgpack library refuses an array whose length differs from the
// struct's field count, so conform rewrites such a body to the exact
// count before it is decoded: extra trailing values are dropped, missing
// ones become nil, which decodes as the zero value. A body whose counts
// already match, the normal case, is used as it is, without a copy.

// shape is the array layout of one message struct: its field count, and
// for each field holding structs, their shape.
type shape struct {
	name   string
	fields int
	nested map[int]nestedShape
}

// nestedShape is a field whose value is a struct (slice false) or an array
// of structs (slice true).
type nestedShape struct {
	s     *shape
	slice bool
}

// shapes maps every frame type to its message's shape.
var shapes = func() map[Type]*shape {
	out := map[Type]*shape{}
	for t := Type(1); t < 255; t++ {
		if m := newMessage(t); m != nil {
			out[t] = shapeOf(reflect.TypeOf(m).Elem())
		}
	}
	return out
}()

// shapeOf derives the shape of an as_array struct type from its fields.
func shapeOf(t reflect.Type) *shape {
	s := &shape{name: t.Name(), nested: map[int]nestedShape{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "_msgpack" || !f.IsExported() {
			continue
		}
		switch {
		case f.Type.Kind() == reflect.Struct:
			s.nested[s.fields] = nestedShape{s: shapeOf(f.Type)}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			s.nested[s.fields] = nestedShape{s: shapeOf(f.Type.Elem()), slice: true}
		}
		s.fields++
	}
	return s
}

// String describes the shape, for tests and docs: "Ack[6]",
// "FetchReply[7: 6=[]Msg[2]]".
func (s *shape) String() string {
	if len(s.nested) == 0 {
		return fmt.Sprintf("%s[%d]", s.name, s.fields)
	}
	var parts []string
	for i := 0; i < s.fields; i++ {
		if n, ok := s.nested[i]; ok {
			prefix := ""
			if n.slice {
				prefix = "[]"
			}
			parts = append(parts, fmt.Sprintf("%d=%s%s", i, prefix, n.s))
		}
	}
	return fmt.Sprintf("%s[%d: %s]", s.name, s.fields, strings.Join(parts, " "))
}

// conform returns body with every struct array at its shape's field
// count. body has passed checkBody, so every length in it is in bounds.
func conform(body []byte, s *shape) ([]byte, error) {
	w := walker{b: body}
	if _, err := w.value(0, s, false); err != nil {
		return nil, err
	}
	if !w.mismatch {
		return body, nil
	}
	w = walker{b: body, out: make([]byte, 0, len(body)+16), write: true}
	if _, err := w.value(0, s, false); err != nil {
		return nil, err
	}
	return w.out, nil
}

// walker walks a msgpack body along a shape. Without write it only notes
// whether some array's length differs from its shape; with write it
// copies the body to out, fixing such arrays.
type walker struct {
	b        []byte
	out      []byte
	write    bool
	mismatch bool
}

// value walks the value at pos: a struct of shape s (a slice of them if
// slice), or, with s nil, any value, copied as it is. It returns the
// position after the value.
func (w *walker) value(pos int, s *shape, slice bool) (int, error) {
	if s == nil {
		end, err := skipValue(w.b, pos)
		if err != nil {
			return 0, err
		}
		w.copy(pos, end)
		return end, nil
	}
	n, start, ok, err := arrayHeader(w.b, pos)
	if err != nil {
		return 0, err
	}
	if !ok { // nil, or not an array: the decoder says what it thinks of it
		return w.value(pos, nil, false)
	}
	if slice {
		w.copy(pos, start)
		for i := 0; i < n; i++ {
			if start, err = w.value(start, s, false); err != nil {
				return 0, err
			}
		}
		return start, nil
	}
	if n != s.fields {
		w.mismatch = true
	}
	if w.write {
		w.out = appendArrayHeader(w.out, s.fields)
	} else if n == s.fields {
		w.copy(pos, start)
	}
	for i := 0; i < n; i++ {
		if i >= s.fields { // a field this version does not know
			if start, err = skipValue(w.b, start); err != nil {
				return 0, err
			}
			continue
		}
		var nested *shape
		var inSlice bool
		if ns, ok := s.nested[i]; ok {
			nested, inSlice = ns.s, ns.slice
		}
		if start, err = w.value(start, nested, inSlice); err != nil {
			return 0, err
		}
	}
	if w.write {
		for i := n; i < s.fields; i++ { // fields the sender's version lacks
			w.out = append(w.out, 0xc0)
		}
	}
	return start, nil
}

func (w *walker) copy(from, to int) {
	if w.write {
		w.out = append(w.out, w.b[from:to]...)
	}
}

// arrayHeader reads an array header at pos: the element count and where
// the elements start. ok is false if the value there is not an array.
func arrayHeader(b []byte, pos int) (n, start int, ok bool, err error) {
	if pos >= len(b) {
		return 0, 0, false, fmt.Errorf("%w: body ends inside a value", ErrMalformed)
	}
	switch c := b[pos]; {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), pos + 1, true, nil
	case c == 0xdc && pos+3 <= len(b):
		return int(binary.BigEndian.Uint16(b[pos+1:])), pos + 3, true, nil
	case c == 0xdd && pos+5 <= len(b):
		return int(binary.BigEndian.Uint32(b[pos+1:])), pos + 5, true, nil
	case c == 0xdc || c == 0xdd:
		return 0, 0, false, fmt.Errorf("%w: body ends inside a length", ErrMalformed)
	}
	return 0, 0, false, nil
}

// appendArrayHeader appends msgpack's shortest header for an array of n.
func appendArrayHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= 0xffff:
		return append(b, 0xdc, byte(n>>8), byte(n))
	default:
		return append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// skipValue returns the position after the msgpack value at pos.
func skipValue(b []byte, pos int) (int, error) {
	pending := 1
	for pending > 0 {
		pending--
		var skip, items uint64
		var err error
		if pos, skip, items, err = header(b, pos); err != nil {
			return 0, err
		}
		if skip > uint64(len(b)-pos) {
			return 0, fmt.Errorf("%w: a value claims %d bytes, %d remain", ErrMalformed, skip, len(b)-pos)
		}
		pos += int(skip)
		if items > uint64(len(b)-pos) {
			return 0, fmt.Errorf("%w: a collection claims %d elements, %d bytes remain", ErrMalformed, items, len(b)-pos)
		}
		pending += int(items)
	}
	return pos, nil
}
