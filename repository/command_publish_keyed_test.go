package repository

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// keyedOf returns the keyed encoding of a Publish or PublishAs.
func keyedOf(cmd any) []byte {
	switch c := cmd.(type) {
	case Publish:
		return encodePublishKeyed(c, "", false)
	case PublishAs:
		return encodePublishKeyed(c.Publish, c.Session, true)
	}
	panic(fmt.Sprintf("keyedOf: %T is not a Publish", cmd))
}

// goldenKeyed pins the keyed Publish body like goldenCommands pins the
// positional ones: each file decodes to its value forever, and the keyed
// encoder writes it byte for byte. They cover the 2x2 the four positional
// types spell out, in one type.
var goldenKeyed = []struct {
	file string
	cmd  any
}{
	{"publishkeyed-v1.hex", Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}, []byte("world")}}},
	{"publishkeyed-checksums-v1.hex", Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}, []byte("world")}, Checksums: []uint32{0x9a71bb4c, 0, 0x7f51f3d1}}},
	{"publishkeyed-as-v1.hex", PublishAs{Session: "pub-7:3", Publish: Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}}}}},
	{"publishkeyed-as-checksums-v1.hex", PublishAs{Session: "pub-7:3", Publish: Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}}, Checksums: []uint32{0x9a71bb4c, 0}}}},
	{"publishkeyed-as-empty-session-v1.hex", PublishAs{Publish: Publish{Source: "s", FirstSeq: 1 << 40, Payloads: [][]byte{bytes.Repeat([]byte{0xab}, 300)}}}},
}

// goldenKeyedDecodeOnly are keyed bodies a future writer may produce and
// this version must read as pinned: keys in another order, and advisory
// fields this version does not know (skipped, whatever their value). Their
// files were written once by keyedExtension; they are never rewritten.
var goldenKeyedDecodeOnly = []struct {
	file string
	cmd  any
}{
	{"publishkeyed-reordered-advisory-v1.hex", PublishAs{Session: "pub-7:3", Publish: Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}}, Checksums: []uint32{0x9a71bb4c, 0}}}},
}

// keyedExtension builds what a future binary could write for the
// decode-only golden: a PublishAs with checksums, its keys reversed, and two
// advisory fields, one a nested map.
func keyedExtension() []byte {
	b := []byte{byte(CmdPublishKeyed)}
	b = appendMapLen(b, 7)
	b = appendString(b, "_trace")
	b = appendString(b, "4bf92f3577b34da6")
	b = appendChecksums(appendString(b, pkChecksums), []uint32{0x9a71bb4c, 0})
	b = appendPayloads(appendString(b, pkPayloads), [][]byte{[]byte("hello"), {}})
	b = appendString(b, "_note")
	b = appendMapLen(b, 2)
	b = appendString(appendString(b, "by"), "G1S2")
	b = appendString(b, "at")
	b = append(appendArrayLen(b, 2), 0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18) // [3.14159..., nil]
	b = append(b, mpNil)
	b = appendString(appendString(b, pkSession), "pub-7:3")
	b = appendUint(appendString(b, pkFirstSeq), 1001)
	return appendString(appendString(b, pkSource), "orders")
}

func TestGoldenPublishKeyed(t *testing.T) {
	for _, g := range goldenKeyed {
		t.Run(g.file, func(t *testing.T) {
			writeMissingGolden(t, g.file, keyedOf(g.cmd))
			data := readGolden(t, g.file)
			got, err := DecodeCommand(data)
			if err != nil {
				t.Fatalf("pinned entry no longer decodes: %v", err)
			}
			if !commandsEqual(got, g.cmd) {
				t.Errorf("pinned entry decodes to %+v, want %+v", got, g.cmd)
			}
			if enc := keyedOf(g.cmd); !bytes.Equal(enc, data) {
				t.Errorf("keyed encoder output changed:\n got %x\nwant %x", enc, data)
			}
			if len(data) != cap(keyedOf(g.cmd)) {
				t.Errorf("keyed encoder sized %d bytes for %d", cap(keyedOf(g.cmd)), len(data))
			}
		})
	}
	for _, g := range goldenKeyedDecodeOnly {
		t.Run(g.file, func(t *testing.T) {
			writeMissingGolden(t, g.file, keyedExtension())
			got, err := DecodeCommand(readGolden(t, g.file))
			if err != nil {
				t.Fatalf("pinned entry no longer decodes: %v", err)
			}
			if !commandsEqual(got, g.cmd) {
				t.Errorf("pinned entry decodes to %+v, want %+v", got, g.cmd)
			}
		})
	}
}

// writeMissingGolden writes data as golden file name if it does not exist
// and -update-golden is set; an existing file is never rewritten.
func writeMissingGolden(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", "commands", name)
	if _, err := os.Stat(path); !os.IsNotExist(err) || !*updateGolden {
		return
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(data)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Nothing writes the keyed body yet: the encoders proposers use still
// write the positional types, so that stores older than CmdPublishKeyed
// keep applying every entry.
func TestPublishEncodersStillWritePositionalTypes(t *testing.T) {
	p := Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{{1}}}
	ps := Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{{1}}, Checksums: []uint32{Checksum([]byte{1})}}
	for _, tc := range []struct {
		data []byte
		want CommandType
	}{
		{EncodePublish(p), CmdPublish},
		{EncodePublish(ps), CmdPublishChecksums},
		{EncodePublishAs(PublishAs{Session: "s", Publish: p}), CmdPublishAs},
		{EncodePublishAs(PublishAs{Session: "s", Publish: ps}), CmdPublishAsChecksums},
	} {
		if got := CommandType(tc.data[0]); got != tc.want {
			t.Errorf("encoded as %v, want %v", got, tc.want)
		}
	}
}

// libPublishKeyed reads the keyed body with the reference msgpack library.
type libPublishKeyed struct {
	Source    string   `msgpack:"src"`
	FirstSeq  uint64   `msgpack:"seq"`
	Session   *string  `msgpack:"sess,omitempty"`
	Payloads  [][]byte `msgpack:"msgs"`
	Checksums []byte   `msgpack:"crc,omitempty"`
}

// value returns what DecodeCommand should read from the same body.
func (v libPublishKeyed) value() any {
	p := Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads}
	if v.Checksums != nil {
		p.Checksums = sumsOf(v.Checksums)
	}
	if v.Session != nil {
		return PublishAs{Session: *v.Session, Publish: p}
	}
	return p
}

func TestPublishKeyedIsStandardMsgpack(t *testing.T) {
	bodies := [][]byte{keyedExtension()}
	for _, g := range goldenKeyed {
		bodies = append(bodies, keyedOf(g.cmd))
	}
	for _, data := range bodies {
		v := libDecode[libPublishKeyed](t, data)
		checkDecodes(t, data, v.value())
		// And we read what the library writes, keys in its own order.
		b, err := msgpack.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		checkDecodes(t, append([]byte{byte(CmdPublishKeyed)}, b...), v.value())
	}
}

// A keyed entry applies exactly as its positional twin: same results, same
// state, inline or as log runs (which read the payloads back from the
// entry).
func TestPublishKeyedAppliesAsPositional(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			log := randomLog(seed, 1500)
			keyed := make([]Entry, len(log))
			converted := 0
			for i, e := range log {
				keyed[i] = e
				if cmd, err := DecodeCommand(e.Data); err == nil && len(e.Data) > 0 {
					if _, ok := cmd.(Publish); ok || isPublishAs(cmd) {
						keyed[i].Data = keyedOf(cmd)
						converted++
					}
				}
			}
			if converted < 100 {
				t.Fatalf("only %d publishes in the log", converted)
			}
			want := map[uint64]string{}
			positional := openTest(t)
			resultsByIndex(want, mustApply(t, positional, log))
			for name, r := range map[string]*Repo{
				"inline":   openTest(t),
				"log runs": openIndexing(t, filepath.Join(t.TempDir(), "keyed.db"), logOfEntries(keyed)),
			} {
				got := map[uint64]string{}
				resultsByIndex(got, mustApply(t, r, keyed))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: keyed entries give other results than positional ones", name)
				}
				if d, w := mustDigest(t, r), mustDigest(t, positional); d != w {
					t.Errorf("%s: keyed entries give digest %s, positional ones %s", name, d, w)
				}
			}
		})
	}
}

func isPublishAs(cmd any) bool { _, ok := cmd.(PublishAs); return ok }

// An essential field this version does not know stops the store: Apply
// fails and nothing of the batch is applied, even if the type byte is
// marked ignorable. Skipping the entry, or refusing it as malformed, would
// lose its messages on this store only.
func TestPublishKeyedUnknownEssentialFieldStops(t *testing.T) {
	body := func(flag CommandType) []byte {
		b := []byte{byte(CmdPublishKeyed | flag)}
		b = appendMapLen(b, 4)
		b = appendString(appendString(b, pkSource), "orders")
		b = appendUint(appendString(b, pkFirstSeq), 1)
		b = appendString(appendString(b, "ttl"), "1h") // a future essential field
		return appendPayloads(appendString(b, pkPayloads), [][]byte{[]byte("m")})
	}
	for _, flag := range []CommandType{0, IgnorableFlag} {
		t.Run(fmt.Sprint(flag|CmdPublishKeyed), func(t *testing.T) {
			data := body(flag)
			if _, err := DecodeCommand(data); !errors.Is(err, ErrUnknownField) {
				t.Fatalf("DecodeCommand: %v, want ErrUnknownField", err)
			}
			r := openTest(t)
			before := mustDigest(t, r)
			entries := append(logOf(1, Register{Source: "orders", Session: "s"}), Entry{Index: 2, Term: 1, Data: data})
			if _, err := r.Apply(entries); !errors.Is(err, ErrUnknownField) {
				t.Fatalf("Apply: %v, want ErrUnknownField", err)
			}
			if r.AppliedIndex() != 0 || mustDigest(t, r) != before {
				t.Error("part of a batch holding an unknown essential field was applied")
			}
		})
	}
}

func TestDecodePublishKeyedErrors(t *testing.T) {
	k := func(b []byte, s string) []byte { return appendString(b, s) }
	head := func(n int) []byte { return appendMapLen([]byte{byte(CmdPublishKeyed)}, n) }
	src := func(b []byte) []byte { return k(k(b, pkSource), "a") }
	seq := func(b []byte) []byte { return appendUint(k(b, pkFirstSeq), 1) }
	msgs := func(b []byte) []byte { return appendPayloads(k(b, pkPayloads), [][]byte{{1}}) }
	valid := msgs(seq(src(head(3))))
	deep := head(4)
	deep = k(msgs(seq(src(deep))), "_deep")
	for range maxSkipDepth + 2 {
		deep = appendArrayLen(deep, 1)
	}
	deep = append(deep, mpNil)
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"not a map", append([]byte{byte(CmdPublishKeyed)}, 0x93, 0xa1, 'a', 0x01, 0x90), ErrBadCommand},
		{"type only", []byte{byte(CmdPublishKeyed)}, ErrBadCommand},
		{"no source", msgs(seq(head(2))), ErrBadCommand},
		{"no first seq", msgs(src(head(2))), ErrBadCommand},
		{"no payloads", seq(src(head(2))), ErrBadCommand},
		{"key twice", seq(msgs(seq(src(head(4))))), ErrBadCommand},
		{"empty key", append(k(valid[:1:1], ""), valid[1:]...), ErrBadCommand},
		{"nil key", msgs(seq(src(append(head(4), mpNil, mpNil)))), ErrBadCommand},
		{"integer key", msgs(seq(src(append(head(4), 0x01, mpNil)))), ErrBadCommand},
		{"map longer than the data", append(head(15), valid[2:]...), ErrBadCommand},
		{"trailing byte", append(append([]byte{}, valid...), mpNil), ErrBadCommand},
		{"truncated", valid[:len(valid)-1], ErrBadCommand},
		{"negative seq", msgs(append(k(src(head(3)), pkFirstSeq), 0xff)), ErrBadCommand},
		{"session nil", msgs(seq(src(append(k(head(4), pkSession), mpNil)))), ErrBadCommand},
		{"checksums nil", append(k(msgs(seq(src(head(4)))), pkChecksums), mpNil), ErrBadCommand},
		{"session not a string", msgs(seq(src(append(k(head(4), pkSession), 0x01)))), ErrBadCommand},
		{"checksums empty", appendBin(k(msgs(seq(src(head(4)))), pkChecksums), []byte{}), ErrBadCommand},
		{"checksums short", appendBin(k(msgs(seq(src(head(4)))), pkChecksums), []byte{1, 2, 3}), ErrBadCommand},
		{"advisory value truncated", append(k(msgs(seq(src(head(4)))), "_x"), 0xa5, 'a'), ErrBadCommand},
		{"advisory value not msgpack", append(k(msgs(seq(src(head(4)))), "_x"), 0xc1), ErrBadCommand},
		{"advisory value nested too deep", deep, ErrBadCommand},
		{"unknown essential key", append(k(msgs(seq(src(head(4)))), "x"), mpNil), ErrUnknownField},
		{"unknown essential key first", msgs(seq(src(append(k(head(4), "x"), mpNil)))), ErrUnknownField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCommand(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeCommand(%x) = %+v, %v; want error %v", tt.data, got, err, tt.want)
			}
			if got != nil {
				t.Errorf("DecodeCommand returned a value with an error: %+v", got)
			}
		})
	}
}

// Advisory values of every msgpack kind are skipped.
func TestPublishKeyedSkipsAdvisoryValues(t *testing.T) {
	values := map[string][]byte{
		"nil": {mpNil}, "bool": {mpTrue}, "fixint": {0x05}, "negative": {0xe0}, "int64": {mpInt64, 0, 0, 0, 0, 0, 0, 0, 1},
		"float32": {0xca, 0, 0, 0, 0}, "float64": {0xcb, 0, 0, 0, 0, 0, 0, 0, 0},
		"str": {0xa2, 'h', 'i'}, "bin16": {mpBin16, 0, 2, 1, 2},
		"fixext4": {0xd6, 0x01, 1, 2, 3, 4}, "ext8": {0xc7, 0x03, 0x01, 1, 2, 3},
		"array": {0x92, 0x01, 0x91, 0xa0}, "map": {0x81, 0xa1, 'k', 0x80}, "map16": {mpMap16, 0, 1, 0x01, 0x02},
	}
	want := Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{{1}}}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			b := appendMapLen([]byte{byte(CmdPublishKeyed)}, 4)
			b = appendString(appendString(b, pkSource), "a")
			b = append(appendString(b, "_"+name), v...)
			b = appendUint(appendString(b, pkFirstSeq), 1)
			b = appendPayloads(appendString(b, pkPayloads), [][]byte{{1}})
			checkDecodes(t, b, want)
		})
	}
}
