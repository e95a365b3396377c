package repository

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// decodeRun returns the payloads of run v (slices of v), or the error
// openRun gives.
func decodeRun(v []byte) ([][]byte, error) {
	r, err := openRun(v)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, r.left) // r.left ≤ len(v): openRun checked
	for r.left > 0 {
		out = append(out, r.next())
	}
	return out, nil
}

// byteSlices turns strings into payloads.
func byteSlices(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func samePayloads(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestRunRoundTrip(t *testing.T) {
	many := make([][]byte, 300) // a count of two bytes
	for i := range many {
		many[i] = bytes.Repeat([]byte{byte(i)}, i%7)
	}
	tests := []struct {
		name     string
		payloads [][]byte
	}{
		{"one empty message", [][]byte{{}}},
		{"one nil message", [][]byte{nil}},
		{"one message", byteSlices("hello")},
		{"several", byteSlices("a", "", "bcd", "", "")},
		{"long lengths", [][]byte{make([]byte, 127), make([]byte, 128), make([]byte, 70000)}},
		{"many", many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := encodeRun(tt.payloads)
			if len(v) != runSize(tt.payloads) || cap(v) != len(v) {
				t.Errorf("encoded %d bytes (capacity %d), runSize says %d", len(v), cap(v), runSize(tt.payloads))
			}
			got, err := decodeRun(v)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !samePayloads(got, tt.payloads) {
				t.Fatalf("decoded %q, want %q", got, tt.payloads)
			}
			// Every suffix re-encodes as the run of those payloads alone,
			// and skip counts the bytes passed over.
			for k := range tt.payloads {
				r, _ := openRun(v)
				want := 0
				for _, p := range tt.payloads[:k] {
					want += len(p)
				}
				if size := r.skip(k); size != uint64(want) {
					t.Errorf("skip(%d) = %d bytes, want %d", k, size, want)
				}
				if rest := r.encodeRest(); !bytes.Equal(rest, encodeRun(tt.payloads[k:])) {
					t.Errorf("messages after %d encode as %x, want %x", k, rest, encodeRun(tt.payloads[k:]))
				}
			}
		})
	}
}

// A payload returned by a run cannot grow into the next one.
func TestRunPayloadsAreCapped(t *testing.T) {
	v := encodeRun(byteSlices("ab", "cd"))
	got, err := decodeRun(v)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0], 'X')
	if again, _ := decodeRun(v); string(again[1]) != "cd" {
		t.Errorf("appending to payload 0 changed payload 1 to %q", again[1])
	}
}

func TestOpenRunRefusesDamage(t *testing.T) {
	good := encodeRun(byteSlices("abc", "de"))           // 02 03 02 'abcde'
	hugeCount := binary.AppendUvarint(nil, 1<<40)        // far more messages than bytes
	hugeLength := binary.AppendUvarint([]byte{1}, 1<<62) // a length past the end
	overflow := append(binary.AppendUvarint([]byte{2}, ^uint64(0)), 0x02, 'a', 'b')
	tests := []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"count unreadable", []byte{0x80}},
		{"count overflows", bytes.Repeat([]byte{0xff}, 11)},
		{"count zero", []byte{0}},
		{"count zero with bytes", []byte{0, 1, 'a'}},
		{"count larger than the bytes", []byte{5, 1, 1, 'a'}},
		{"huge count", append(hugeCount, 1, 2, 3)},
		{"length unreadable", []byte{1, 0x80}},
		{"length beyond the end", []byte{1, 4, 'a', 'b'}},
		{"huge length", hugeLength},
		{"lengths summing past the end", overflow},
		{"trailing byte", append(bytes.Clone(good), 'x')},
		{"missing payload byte", good[:len(good)-1]},
		{"missing length", []byte{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := openRun(tt.v); !errors.Is(err, ErrFormat) {
				t.Errorf("openRun(%x) = %v, want ErrFormat", tt.v, err)
			}
		})
	}
	// Every truncation of a run is refused.
	v := encodeRun([][]byte{[]byte("first"), {}, make([]byte, 200), []byte("last")})
	for n := range len(v) {
		if _, err := openRun(v[:n]); !errors.Is(err, ErrFormat) {
			t.Errorf("run cut to %d of %d bytes: %v, want ErrFormat", n, len(v), err)
		}
	}
}

func TestRunPrefix(t *testing.T) {
	tests := []struct {
		sizes []int
		limit int
		want  []int // how many messages each run takes
	}{
		{[]int{1, 1, 1}, 100, []int{3}},
		{[]int{10, 10, 10}, 23, []int{2, 1}},    // two take 1+2×(1+10) = 23
		{[]int{10, 10, 10}, 22, []int{1, 1, 1}}, // too few for two
		{[]int{50, 1, 1}, 10, []int{1, 2}},      // too large alone: a run of its own
		{[]int{1, 50, 1}, 10, []int{1, 1, 1}},   // and never joined to a neighbour
		{[]int{0, 0, 0, 0}, 5, []int{4}},        // 1+4×1
		{[]int{0, 0, 0, 0}, 4, []int{3, 1}},
		{[]int{200, 200}, 405, []int{2}}, // two-byte lengths: 1+2×(2+200)
		{[]int{200, 200}, 404, []int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sizes, tt.limit), func(t *testing.T) {
			payloads := make([][]byte, len(tt.sizes))
			for i, s := range tt.sizes {
				payloads[i] = make([]byte, s)
			}
			var got []int
			for rest := payloads; len(rest) > 0; {
				n := runPrefix(rest, tt.limit)
				if n < 1 || n > len(rest) {
					t.Fatalf("runPrefix took %d of %d", n, len(rest))
				}
				if size := runSize(rest[:n]); n > 1 && size > tt.limit {
					t.Errorf("run of %d messages takes %d bytes, limit %d", n, size, tt.limit)
				}
				if n < len(rest) && runSize(rest[:n+1]) <= tt.limit {
					t.Errorf("run of %d messages stops short: %d would take %d bytes, limit %d", n, n+1, runSize(rest[:n+1]), tt.limit)
				}
				got = append(got, n)
				rest = rest[n:]
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("runs of %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMaxPayloadSize(t *testing.T) {
	// The largest payload's run of one just fits a bbolt value.
	if got := 1 + uvarintLen(maxPayloadSize) + maxPayloadSize; got != 2147483646 {
		t.Errorf("run of the largest payload takes %d bytes, bolt.MaxValueSize is 2147483646", got)
	}
	for _, x := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<32 - 1, ^uint64(0)} {
		if got, want := uvarintLen(x), len(binary.AppendUvarint(nil, x)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", x, got, want)
		}
	}
}

// FuzzOpenRun feeds openRun arbitrary values, as a damaged file could: it
// must never panic, and whatever it accepts must re-encode to the same bytes
// when its lengths are minimal.
func FuzzOpenRun(f *testing.F) {
	f.Add(encodeRun(byteSlices("a", "", "bc")))
	f.Add([]byte{1, 0})
	f.Add([]byte{0x80, 0x01})
	f.Add([]byte{3, 1, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decodeRun(v)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("accepted a run without messages")
		}
		again := encodeRun(got)
		if len(again) > len(v) {
			t.Fatalf("%x decodes to %q, which encodes longer: %x", v, got, again)
		}
	})
}
