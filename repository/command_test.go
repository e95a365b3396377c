//lint:file-ignore U1000 the msgpack reference types carry a _msgpack field that msgpack reads by reflection (as_array)

package repository

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

var updateGolden = flag.Bool("update-golden", false, "write missing golden command files under testdata/commands (existing files are never rewritten)")

// goldenCommands are pinned encodings. Their files must keep decoding to
// these values for as long as stores may hold such entries in their logs:
// never edit a file to make a test pass; add a new command type instead.
var goldenCommands = []struct {
	file string
	cmd  any
}{
	{"initgroup-v1.hex", InitGroup{GroupID: "5f1c9e2a-6b7d-4e3f-9a0b-1c2d3e4f5a6b", Index: 1, UnixNano: 1735689600123456789}},
	{"register-v1.hex", Register{Source: "orders", Session: "pub-7:3", UnixNano: 1735689601000000000}},
	{"register-empty-session-v1.hex", Register{Source: "s", UnixNano: -1}},
	{"publish-v1.hex", Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}, []byte("world")}}},
	{"publish-bin16-v1.hex", Publish{Source: "big", FirstSeq: 1 << 40, Payloads: [][]byte{bytes.Repeat([]byte{0xab}, 300)}}},
	{"peergroup-v1.hex", PeerGroup{Index: 2, GroupID: "0c7a4d1e-93b2-4f58-a6e1-2b3c4d5e6f70", UnixNano: 1735689700987654321}},
	{"peergroup-index300-v1.hex", PeerGroup{Index: 300, GroupID: "g", UnixNano: -5}},
	{"publishas-v1.hex", PublishAs{Session: "pub-7:3", Publish: Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}}}}},
	{"consumed-v1.hex", Consumed{Source: "orders", Receiver: "billing-7", Seq: 1001, UnixNano: 1735689800123456789}},
	{"consumed-wide-v1.hex", Consumed{Source: "s", Receiver: "dashboard/eu-west-1/replica-0001/consumer", Seq: 1 << 40, UnixNano: -1}},
	{"trim-v1.hex", Trim{Source: "orders", Through: 1000, Reason: "bytes", UnixNano: 1735689900123456789}},
	{"trim-note-v1.hex", Trim{Source: "s", Through: 1 << 40, Reason: "operator: disk full on eu-west-1, keep one day", UnixNano: -1}},
	{"expiresession-v1.hex", ExpireSession{Source: "orders", Session: "pub-7:3", UnixNano: 1735690000123456789}},
	{"expiresession-wide-v1.hex", ExpireSession{Source: "s", Session: "publisher/eu-west-1/host-0001/pid-4242/incarnation-7", UnixNano: -1}},
	{"registerreceiver-v1.hex", RegisterReceiver{Source: "orders", Receiver: "billing-7", Session: "rcv-3f2a", Paced: false, UnixNano: 1735690100123456789}},
	{"registerreceiver-paced-v1.hex", RegisterReceiver{Source: "s", Receiver: "dashboard/eu-west-1/replica-0001/consumer", Session: "rcv/eu-west-1/host-0001/pid-4242", Paced: true, UnixNano: -1}},
	{"expirereceiver-v1.hex", ExpireReceiver{Source: "orders", Receiver: "billing-7", Session: "rcv-3f2a", UnixNano: 1735690200123456789}},
	{"forgetreceiver-v1.hex", ForgetReceiver{Source: "orders", Receiver: "billing-7", Session: "rcv-3f2a", UnixNano: 1735690300123456789}},
	{"registerpaced-blocking-v1.hex", RegisterPaced{Register: Register{Source: "orders", Session: "pub-7:3", UnixNano: 1735690400123456789}, Pacing: PacingBlocking}},
	{"registerpaced-none-v1.hex", RegisterPaced{Register: Register{Source: "s", UnixNano: -1}, Pacing: PacingNone}},
	{"publish-checksums-v1.hex", Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}, []byte("world")}, Checksums: []uint32{0x9a71bb4c, 0, 0x7f51f3d1}}},
	{"publishas-checksums-v1.hex", PublishAs{Session: "pub-7:3", Publish: Publish{Source: "orders", FirstSeq: 1001, Payloads: [][]byte{[]byte("hello"), {}}, Checksums: []uint32{0x9a71bb4c, 0}}}},
	{"unpublished-v1.hex", Unpublished{Source: "orders", Session: "pub-7:3", From: 11, To: 4106}},
	{"activelevel-v1.hex", ActiveLevel{Level: 2}},
	{"forgetsource-v1.hex", ForgetSource{Source: "orders", Session: "pub-7:3"}},
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "commands", name))
	if err != nil {
		t.Fatalf("golden file: %v (run go test -run TestGoldenCommands -update-golden to create a missing one)", err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	if err != nil {
		t.Fatalf("golden file %s: %v", name, err)
	}
	return b
}

func TestGoldenCommands(t *testing.T) {
	for _, g := range goldenCommands {
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join("testdata", "commands", g.file)
			if _, err := os.Stat(path); os.IsNotExist(err) && *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(hex.EncodeToString(encode(g.cmd))+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data := readGolden(t, g.file)
			got, err := DecodeCommand(data)
			if err != nil {
				t.Fatalf("pinned entry no longer decodes: %v", err)
			}
			if !commandsEqual(got, g.cmd) {
				t.Errorf("pinned entry decodes to %+v, want %+v", got, g.cmd)
			}
			if enc := encode(g.cmd); !bytes.Equal(enc, data) {
				t.Errorf("encoder output changed:\n got %x\nwant %x", enc, data)
			}
		})
	}
}

// commandsEqual compares decoded commands, treating nil and empty payloads
// alike (msgpack does not tell them apart).
func commandsEqual(a, b any) bool {
	pa, okA := a.(Publish)
	pb, okB := b.(Publish)
	if !okA || !okB {
		return reflect.DeepEqual(a, b)
	}
	if pa.Source != pb.Source || pa.FirstSeq != pb.FirstSeq || len(pa.Payloads) != len(pb.Payloads) || !slices.Equal(pa.Checksums, pb.Checksums) {
		return false
	}
	for i := range pa.Payloads {
		if !bytes.Equal(pa.Payloads[i], pb.Payloads[i]) {
			return false
		}
	}
	return true
}

// The bodies are plain msgpack: the reference library reads what we write
// and we read what it writes (including its fixed-width integers).
type libInitGroup struct {
	_msgpack struct{} `msgpack:",as_array"`
	GroupID  string
	Index    int
	UnixNano int64
}

type libRegister struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
	UnixNano int64
}

type libPublish struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	FirstSeq uint64
	Payloads [][]byte
}

type libPublishAs struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
	FirstSeq uint64
	Payloads [][]byte
}

type libPublishSums struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Source    string
	FirstSeq  uint64
	Payloads  [][]byte
	Checksums []byte
}

type libPublishAsSums struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Source    string
	Session   string
	FirstSeq  uint64
	Payloads  [][]byte
	Checksums []byte
}

// sumsOf and sumBytes convert between Checksums and their bin encoding.
func sumsOf(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return out
}

func sumBytes(sums []uint32) []byte {
	var b []byte
	for _, c := range sums {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	return b
}

type libPeerGroup struct {
	_msgpack struct{} `msgpack:",as_array"`
	Index    int
	GroupID  string
	UnixNano int64
}

type libConsumed struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Receiver string
	Seq      uint64
	UnixNano int64
}

type libTrim struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Through  uint64
	Reason   string
	UnixNano int64
}

type libUnpublished struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
	From, To uint64
}

type libActiveLevel struct {
	_msgpack struct{} `msgpack:",as_array"`
	Level    uint64
}

type libForgetSource struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
}

type libExpireSession struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
	UnixNano int64
}

type libRegisterReceiver struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Receiver string
	Session  string
	Paced    bool
	UnixNano int64
}

// libReceiverSession is the body of ExpireReceiver and ForgetReceiver.
type libReceiverSession struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Receiver string
	Session  string
	UnixNano int64
}

type libRegisterPaced struct {
	_msgpack struct{} `msgpack:",as_array"`
	Source   string
	Session  string
	Pacing   uint8
	UnixNano int64
}

func TestCommandBodiesAreStandardMsgpack(t *testing.T) {
	for _, g := range goldenCommands {
		t.Run(g.file, func(t *testing.T) {
			data := encode(g.cmd)
			var lib, back any
			switch c := g.cmd.(type) {
			case InitGroup:
				v := libDecode[libInitGroup](t, data)
				lib, back = InitGroup{v.GroupID, v.Index, v.UnixNano}, c
				checkLibEncoded(t, CmdInitGroup, &libInitGroup{GroupID: c.GroupID, Index: c.Index, UnixNano: c.UnixNano}, c)
			case Register:
				v := libDecode[libRegister](t, data)
				lib, back = Register{v.Source, v.Session, v.UnixNano}, c
				checkLibEncoded(t, CmdRegister, &libRegister{Source: c.Source, Session: c.Session, UnixNano: c.UnixNano}, c)
			case Publish:
				if len(c.Checksums) > 0 {
					v := libDecode[libPublishSums](t, data)
					lib, back = Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads, Checksums: sumsOf(v.Checksums)}, c
					checkLibEncoded(t, CmdPublishChecksums, &libPublishSums{Source: c.Source, FirstSeq: c.FirstSeq, Payloads: c.Payloads, Checksums: sumBytes(c.Checksums)}, c)
					break
				}
				v := libDecode[libPublish](t, data)
				lib, back = Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads}, c
				checkLibEncoded(t, CmdPublish, &libPublish{Source: c.Source, FirstSeq: c.FirstSeq, Payloads: c.Payloads}, c)
			case PublishAs:
				if len(c.Checksums) > 0 {
					v := libDecode[libPublishAsSums](t, data)
					lib, back = PublishAs{v.Session, Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads, Checksums: sumsOf(v.Checksums)}}, c
					checkLibEncoded(t, CmdPublishAsChecksums, &libPublishAsSums{Source: c.Source, Session: c.Session, FirstSeq: c.FirstSeq, Payloads: c.Payloads, Checksums: sumBytes(c.Checksums)}, c)
					break
				}
				v := libDecode[libPublishAs](t, data)
				lib, back = PublishAs{v.Session, Publish{Source: v.Source, FirstSeq: v.FirstSeq, Payloads: v.Payloads}}, c
				checkLibEncoded(t, CmdPublishAs, &libPublishAs{Source: c.Source, Session: c.Session, FirstSeq: c.FirstSeq, Payloads: c.Payloads}, c)
			case PeerGroup:
				v := libDecode[libPeerGroup](t, data)
				lib, back = PeerGroup{v.Index, v.GroupID, v.UnixNano}, c
				checkLibEncoded(t, CmdPeerGroup, &libPeerGroup{Index: c.Index, GroupID: c.GroupID, UnixNano: c.UnixNano}, c)
			case Consumed:
				v := libDecode[libConsumed](t, data)
				lib, back = Consumed{v.Source, v.Receiver, v.Seq, v.UnixNano}, c
				checkLibEncoded(t, CmdConsumed, &libConsumed{Source: c.Source, Receiver: c.Receiver, Seq: c.Seq, UnixNano: c.UnixNano}, c)
			case Trim:
				v := libDecode[libTrim](t, data)
				lib, back = Trim{v.Source, v.Through, v.Reason, v.UnixNano}, c
				checkLibEncoded(t, CmdTrim, &libTrim{Source: c.Source, Through: c.Through, Reason: c.Reason, UnixNano: c.UnixNano}, c)
			case Unpublished:
				v := libDecode[libUnpublished](t, data)
				lib, back = Unpublished{v.Source, v.Session, v.From, v.To}, c
				checkLibEncoded(t, CmdUnpublished|IgnorableFlag, &libUnpublished{Source: c.Source, Session: c.Session, From: c.From, To: c.To}, c)
			case ActiveLevel:
				v := libDecode[libActiveLevel](t, data)
				lib, back = ActiveLevel{v.Level}, c
				checkLibEncoded(t, CmdActiveLevel|IgnorableFlag, &libActiveLevel{Level: c.Level}, c)
			case ForgetSource:
				v := libDecode[libForgetSource](t, data)
				lib, back = ForgetSource{v.Source, v.Session}, c
				checkLibEncoded(t, CmdForgetSource, &libForgetSource{Source: c.Source, Session: c.Session}, c)
			case ExpireSession:
				v := libDecode[libExpireSession](t, data)
				lib, back = ExpireSession{v.Source, v.Session, v.UnixNano}, c
				checkLibEncoded(t, CmdExpireSession, &libExpireSession{Source: c.Source, Session: c.Session, UnixNano: c.UnixNano}, c)
			case RegisterReceiver:
				v := libDecode[libRegisterReceiver](t, data)
				lib, back = RegisterReceiver{v.Source, v.Receiver, v.Session, v.Paced, v.UnixNano}, c
				checkLibEncoded(t, CmdRegisterReceiver, &libRegisterReceiver{Source: c.Source, Receiver: c.Receiver, Session: c.Session, Paced: c.Paced, UnixNano: c.UnixNano}, c)
			case ExpireReceiver:
				v := libDecode[libReceiverSession](t, data)
				lib, back = ExpireReceiver{v.Source, v.Receiver, v.Session, v.UnixNano}, c
				checkLibEncoded(t, CmdExpireReceiver, &libReceiverSession{Source: c.Source, Receiver: c.Receiver, Session: c.Session, UnixNano: c.UnixNano}, c)
			case ForgetReceiver:
				v := libDecode[libReceiverSession](t, data)
				lib, back = ForgetReceiver{v.Source, v.Receiver, v.Session, v.UnixNano}, c
				checkLibEncoded(t, CmdForgetReceiver, &libReceiverSession{Source: c.Source, Receiver: c.Receiver, Session: c.Session, UnixNano: c.UnixNano}, c)
			case RegisterPaced:
				v := libDecode[libRegisterPaced](t, data)
				lib, back = RegisterPaced{Register{Source: v.Source, Session: v.Session, UnixNano: v.UnixNano}, Pacing(v.Pacing)}, c
				checkLibEncoded(t, CmdRegisterPaced, &libRegisterPaced{Source: c.Source, Session: c.Session, Pacing: uint8(c.Pacing), UnixNano: c.UnixNano}, c)
			default:
				t.Fatalf("no msgpack library check for %T", g.cmd)
			}
			if !commandsEqual(lib, back) {
				t.Errorf("msgpack library reads %+v, want %+v", lib, back)
			}
		})
	}
}

// libDecode reads the body of an encoded command with the msgpack library
// into a value of L.
func libDecode[L any](t *testing.T, data []byte) L {
	t.Helper()
	var v L
	if err := msgpack.Unmarshal(data[1:], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkLibEncoded encodes body with the msgpack library as a command of type
// typ and checks that DecodeCommand reads it as want.
func checkLibEncoded(t *testing.T, typ CommandType, body, want any) {
	t.Helper()
	b, err := msgpack.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	checkDecodes(t, append([]byte{byte(typ)}, b...), want)
}

// checkDecodes checks that DecodeCommand reads data, a command the msgpack
// library encoded, as want.
func checkDecodes(t *testing.T, data []byte, want any) {
	t.Helper()
	got, err := DecodeCommand(data)
	if err != nil {
		t.Fatalf("DecodeCommand(library encoding %x): %v", data, err)
	}
	if !commandsEqual(got, want) {
		t.Errorf("DecodeCommand(library encoding) = %+v, want %+v", got, want)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 70000) // bin32
	cmds := []any{
		InitGroup{},
		InitGroup{GroupID: strings.Repeat("g", 40), Index: -3, UnixNano: -1 << 40},
		Register{Source: strings.Repeat("s", 300), Session: strings.Repeat("x", 70000), UnixNano: 1<<63 - 1},
		Publish{Source: "a", FirstSeq: ^uint64(0)},
		Publish{Source: "a", FirstSeq: 127, Payloads: make([][]byte, 20)},
		Publish{Source: "a", FirstSeq: 128, Payloads: [][]byte{big, {1}}},
		Publish{Source: "a", FirstSeq: 70000, Payloads: make([][]byte, 70000)},
		PeerGroup{},
		PeerGroup{Index: 1<<31 + 5, GroupID: strings.Repeat("p", 300), UnixNano: 1<<63 - 1},
		PeerGroup{Index: -1, GroupID: "g", UnixNano: -1 << 63},
		Consumed{},
		Consumed{Source: strings.Repeat("s", 300), Receiver: strings.Repeat("r", 70000), Seq: ^uint64(0), UnixNano: 1<<63 - 1},
		Consumed{Source: "a", Receiver: "r", Seq: 128, UnixNano: -1 << 63},
		Consumed{Source: "a", Receiver: "r", Seq: 1 << 32, UnixNano: -33},
		Trim{},
		Trim{Source: strings.Repeat("s", 300), Through: ^uint64(0), Reason: strings.Repeat("n", 70000), UnixNano: 1<<63 - 1},
		Trim{Source: "a", Through: 128, Reason: "age", UnixNano: -1 << 63},
		Trim{Source: "a", Through: 1 << 32, UnixNano: -33},
		ExpireSession{},
		ExpireSession{Source: strings.Repeat("s", 300), Session: strings.Repeat("x", 70000), UnixNano: 1<<63 - 1},
		ExpireSession{Source: "a", Session: "s", UnixNano: -1 << 63},
		ExpireSession{Source: "a", Session: strings.Repeat("x", 32), UnixNano: 1 << 32},
		RegisterReceiver{},
		RegisterReceiver{Source: strings.Repeat("s", 300), Receiver: strings.Repeat("r", 70000), Session: strings.Repeat("x", 40), Paced: true, UnixNano: 1<<63 - 1},
		RegisterReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: -1 << 63},
		ExpireReceiver{},
		ExpireReceiver{Source: "a", Receiver: strings.Repeat("r", 300), Session: strings.Repeat("x", 70000), UnixNano: 1 << 32},
		ForgetReceiver{},
		ForgetReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: -33},
		RegisterPaced{},
		RegisterPaced{Register: Register{Source: strings.Repeat("s", 300), Session: strings.Repeat("x", 70000), UnixNano: 1<<63 - 1}, Pacing: 255},
		RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: -1 << 63}, Pacing: PacingNonBlocking},
	}
	for _, c := range cmds {
		data := encode(c)
		got, err := DecodeCommand(data)
		if err != nil {
			t.Errorf("%T: %v", c, err)
			continue
		}
		if !commandsEqual(got, c) {
			t.Errorf("round trip of %T changed the value", c)
		}
	}
}

func TestEncodePublishSizesExactly(t *testing.T) {
	c := Publish{Source: "orders", FirstSeq: 1 << 33, Payloads: payloads("m", 1, 16)}
	b := EncodePublish(c)
	if len(b) != cap(b) {
		t.Errorf("EncodePublish: len %d, cap %d: size computed wrongly", len(b), cap(b))
	}
	if n := testing.AllocsPerRun(100, func() { EncodePublish(c) }); n != 1 {
		t.Errorf("EncodePublish allocates %v times, want 1", n)
	}
}

func TestDecodeCommandErrors(t *testing.T) {
	valid := EncodePublish(Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{{1}}})
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrBadCommand},
		{"type only", []byte{byte(CmdPublish)}, ErrBadCommand},
		{"unknown type", []byte{0x42, 0x90}, ErrUnknownCommand},
		{"type zero", []byte{0}, ErrUnknownCommand},
		{"unknown ignorable type", []byte{0xc2}, ErrUnknownCommand},
		{"truncated", valid[:len(valid)-1], ErrBadCommand},
		{"trailing byte", append(append([]byte{}, valid...), 0), ErrBadCommand},
		{"too few fields", []byte{byte(CmdRegister), 0x92, 0xa1, 'a', 0xa0}, ErrBadCommand},
		{"too many fields", []byte{byte(CmdRegister), 0x94, 0xa1, 'a', 0xa0, 0x00, 0x00}, ErrBadCommand},
		{"not an array", []byte{byte(CmdRegister), 0x80}, ErrBadCommand},
		{"negative sequence", []byte{byte(CmdPublish), 0x93, 0xa1, 'a', 0xff, 0x90}, ErrBadCommand},
		{"huge payload count", []byte{byte(CmdPublish), 0x93, 0xa1, 'a', 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"huge string", []byte{byte(CmdRegister), 0x93, 0xdb, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"uint64 in int field", []byte{byte(CmdRegister), 0x93, 0xa1, 'a', 0xa0, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"map instead of string", []byte{byte(CmdRegister), 0x93, 0x80, 0xa0, 0x00}, ErrBadCommand},
		{"peer group fields swapped", []byte{byte(CmdPeerGroup), 0x93, 0xa1, 'g', 0x02, 0x00}, ErrBadCommand},
		{"peer group too few fields", []byte{byte(CmdPeerGroup), 0x92, 0x02, 0xa1, 'g'}, ErrBadCommand},
		{"peer group too many fields", []byte{byte(CmdPeerGroup), 0x94, 0x02, 0xa1, 'g', 0x00, 0x00}, ErrBadCommand},
		{"peer group index uint64", []byte{byte(CmdPeerGroup), 0x93, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xa1, 'g', 0x00}, ErrBadCommand},
		{"peer group trailing byte", append(EncodePeerGroup(PeerGroup{Index: 2, GroupID: "g"}), 0xc0), ErrBadCommand},
		{"consumed type only", []byte{byte(CmdConsumed)}, ErrBadCommand},
		{"consumed too few fields", []byte{byte(CmdConsumed), 0x93, 0xa1, 'a', 0xa1, 'r', 0x01}, ErrBadCommand},
		{"consumed too many fields", []byte{byte(CmdConsumed), 0x95, 0xa1, 'a', 0xa1, 'r', 0x01, 0x00, 0x00}, ErrBadCommand},
		{"consumed fields swapped", []byte{byte(CmdConsumed), 0x94, 0xa1, 'a', 0x01, 0xa1, 'r', 0x00}, ErrBadCommand},
		{"consumed negative sequence", []byte{byte(CmdConsumed), 0x94, 0xa1, 'a', 0xa1, 'r', 0xff, 0x00}, ErrBadCommand},
		{"consumed uint64 time", []byte{byte(CmdConsumed), 0x94, 0xa1, 'a', 0xa1, 'r', 0x01, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"consumed truncated", EncodeConsumed(Consumed{Source: "a", Receiver: "r", Seq: 1 << 40})[:12], ErrBadCommand},
		{"consumed trailing byte", append(EncodeConsumed(Consumed{Source: "a", Receiver: "r", Seq: 1}), 0xc0), ErrBadCommand},
		{"trim type only", []byte{byte(CmdTrim)}, ErrBadCommand},
		{"trim too few fields", []byte{byte(CmdTrim), 0x93, 0xa1, 'a', 0x01, 0xa0}, ErrBadCommand},
		{"trim too many fields", []byte{byte(CmdTrim), 0x95, 0xa1, 'a', 0x01, 0xa0, 0x00, 0x00}, ErrBadCommand},
		{"trim fields swapped", []byte{byte(CmdTrim), 0x94, 0xa1, 'a', 0xa0, 0x01, 0x00}, ErrBadCommand},
		{"trim negative through", []byte{byte(CmdTrim), 0x94, 0xa1, 'a', 0xff, 0xa0, 0x00}, ErrBadCommand},
		{"trim uint64 time", []byte{byte(CmdTrim), 0x94, 0xa1, 'a', 0x01, 0xa0, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"trim reason not a string", []byte{byte(CmdTrim), 0x94, 0xa1, 'a', 0x01, 0x05, 0x00}, ErrBadCommand},
		{"trim truncated", EncodeTrim(Trim{Source: "a", Through: 1 << 40, Reason: "bytes"})[:10], ErrBadCommand},
		{"trim trailing byte", append(EncodeTrim(Trim{Source: "a", Through: 1}), 0xc0), ErrBadCommand},
		{"expire type only", []byte{byte(CmdExpireSession)}, ErrBadCommand},
		{"expire too few fields", []byte{byte(CmdExpireSession), 0x92, 0xa1, 'a', 0xa1, 's'}, ErrBadCommand},
		{"expire too many fields", []byte{byte(CmdExpireSession), 0x94, 0xa1, 'a', 0xa1, 's', 0x00, 0x00}, ErrBadCommand},
		{"expire fields swapped", []byte{byte(CmdExpireSession), 0x93, 0xa1, 'a', 0x00, 0xa1, 's'}, ErrBadCommand},
		{"expire session not a string", []byte{byte(CmdExpireSession), 0x93, 0xa1, 'a', 0x05, 0x00}, ErrBadCommand},
		{"expire uint64 time", []byte{byte(CmdExpireSession), 0x93, 0xa1, 'a', 0xa1, 's', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"expire not an array", []byte{byte(CmdExpireSession), 0x83, 0xa1, 'a', 0xa1, 's', 0x00}, ErrBadCommand},
		{"expire truncated", EncodeExpireSession(ExpireSession{Source: "a", Session: "s", UnixNano: 1 << 40})[:8], ErrBadCommand},
		{"expire trailing byte", append(EncodeExpireSession(ExpireSession{Source: "a", Session: "s"}), 0xc0), ErrBadCommand},
		{"register receiver type only", []byte{byte(CmdRegisterReceiver)}, ErrBadCommand},
		{"register receiver too few fields", []byte{byte(CmdRegisterReceiver), 0x94, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0xc3}, ErrBadCommand},
		{"register receiver too many fields", []byte{byte(CmdRegisterReceiver), 0x96, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0xc3, 0x00, 0x00}, ErrBadCommand},
		{"register receiver paced not a bool", []byte{byte(CmdRegisterReceiver), 0x95, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0x01, 0x00}, ErrBadCommand},
		{"register receiver paced nil", []byte{byte(CmdRegisterReceiver), 0x95, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0xc0, 0x00}, ErrBadCommand},
		{"register receiver truncated", EncodeRegisterReceiver(RegisterReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: 1 << 40})[:9], ErrBadCommand},
		{"register receiver trailing byte", append(EncodeRegisterReceiver(RegisterReceiver{Source: "a", Receiver: "r", Session: "s"}), 0xc0), ErrBadCommand},
		{"expire receiver too few fields", []byte{byte(CmdExpireReceiver), 0x93, 0xa1, 'a', 0xa1, 'r', 0xa1, 's'}, ErrBadCommand},
		{"expire receiver session not a string", []byte{byte(CmdExpireReceiver), 0x94, 0xa1, 'a', 0xa1, 'r', 0x05, 0x00}, ErrBadCommand},
		{"expire receiver uint64 time", []byte{byte(CmdExpireReceiver), 0x94, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ErrBadCommand},
		{"forget receiver too many fields", []byte{byte(CmdForgetReceiver), 0x95, 0xa1, 'a', 0xa1, 'r', 0xa1, 's', 0x00, 0x00}, ErrBadCommand},
		{"forget receiver trailing byte", append(EncodeForgetReceiver(ForgetReceiver{Source: "a", Receiver: "r", Session: "s"}), 0xc0), ErrBadCommand},
		{"register paced negative mode", []byte{byte(CmdRegisterPaced), 0x94, 0xa1, 'a', 0xa1, 's', 0xff, 0x00}, ErrBadCommand},
		{"register paced mode beyond a byte", []byte{byte(CmdRegisterPaced), 0x94, 0xa1, 'a', 0xa1, 's', 0xcd, 0x01, 0x00, 0x00}, ErrBadCommand},
		{"register paced mode a string", []byte{byte(CmdRegisterPaced), 0x94, 0xa1, 'a', 0xa1, 's', 0xa1, '1', 0x00}, ErrBadCommand},
		{"register paced too few fields", []byte{byte(CmdRegisterPaced), 0x93, 0xa1, 'a', 0xa1, 's', 0x01}, ErrBadCommand},
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

func TestDecodedPayloadsAliasTheEntry(t *testing.T) {
	data := EncodePublish(Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("xy")}})
	cmd, err := DecodeCommand(data)
	if err != nil {
		t.Fatal(err)
	}
	p := cmd.(Publish).Payloads[0]
	if cap(p) != len(p) {
		t.Errorf("payload capacity %d reaches past its end (len %d): an append would overwrite the entry", cap(p), len(p))
	}
	data[len(data)-1] = 'z'
	if string(p) != "xz" {
		t.Errorf("payload %q does not alias the entry (documented zero-copy)", p)
	}
}

func TestCommandTypeString(t *testing.T) {
	for typ, want := range map[CommandType]string{
		CmdPublish:                        "Publish",
		CmdPeerGroup:                      "PeerGroup",
		CmdPeerGroup | IgnorableFlag:      "PeerGroup|Ignorable",
		CmdInitGroup | IgnorableFlag:      "InitGroup|Ignorable",
		CmdConsumed:                       "Consumed",
		CmdConsumed | IgnorableFlag:       "Consumed|Ignorable",
		CmdTrim:                           "Trim",
		CmdTrim | IgnorableFlag:           "Trim|Ignorable",
		CmdExpireSession:                  "ExpireSession",
		CmdExpireSession | IgnorableFlag:  "ExpireSession|Ignorable",
		CmdRegisterReceiver:               "RegisterReceiver",
		CmdExpireReceiver | IgnorableFlag: "ExpireReceiver|Ignorable",
		CmdForgetReceiver:                 "ForgetReceiver",
		CmdRegisterPaced:                  "RegisterPaced",
		CmdPublishChecksums:               "PublishChecksums",
		CmdPublishAsChecksums:             "PublishAsChecksums",
		CmdMemberAddress:                  "MemberAddress",
		CmdPublishKeyed:                   "PublishKeyed",
		CmdPublishKeyed | IgnorableFlag:   "PublishKeyed|Ignorable",
		CmdUnpublished | IgnorableFlag:    "Unpublished|Ignorable",
		CmdActiveLevel | IgnorableFlag:    "ActiveLevel|Ignorable",
		99:                                "CommandType(99)",
		0:                                 "CommandType(0)",
		99 | IgnorableFlag:                "CommandType(99)|Ignorable",
	} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", byte(typ), got, want)
		}
	}
}

// Every row of the command table has a pinned sample: a type that could be
// applied but has none could change its body unnoticed.
func TestEveryCommandTypeIsPinned(t *testing.T) {
	pinned := map[CommandType]bool{}
	for _, g := range goldenCommands {
		pinned[CommandType(readGolden(t, g.file)[0])&^IgnorableFlag] = true // an advisory type is written with the flag
	}
	for _, g := range goldenKeyed {
		pinned[CommandType(readGolden(t, g.file)[0])] = true
	}
	pinned[CommandType(readGolden(t, "memberaddress-v1.hex")[0])] = true
	for typ := range IgnorableFlag {
		if spec := specOf(typ); spec.known() && !pinned[typ] {
			t.Errorf("command type %d (%s) has no golden sample under testdata/commands", byte(typ), spec.name)
		}
	}
}
