package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The shapes of the messages before fields were appended to them, as the
// msgpack library encodes and decodes them: what older peers send and
// expect.
type (
	publishV1 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
		Source   string
		FirstSeq uint64
		Payloads [][]byte
	}
	msgV1 struct {
		_msgpack struct{} `msgpack:",as_array"`
		Seq      uint64
		Payload  []byte
	}
	fetchReplyV1 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
		Source   string
		Known    bool
		HighSeq  uint64
		LowSeq   uint64
		Through  uint64
		Msgs     []msgV1
	}
	fetchV1 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
		Source   string
		From     uint64
		To       uint64
		MaxCount int
		MaxBytes int
	}
	shutdownV1 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
	}
	shutdownV2 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
		Token    string
	}
)

func libEncode(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Frames of peers from before the appended fields decode, the fields zero;
// and a message that does not use them is sent in the shape those peers
// know, so they decode it too.
func TestAppendedFieldsStayCompatible(t *testing.T) {
	payloads := [][]byte{[]byte("a"), nil, []byte("ccc")}
	tests := []struct {
		name string
		old  any     // the older shape, as an older peer encodes it
		cur  Message // the same message in today's shape, added fields zero
	}{
		{"Publish without Checksums", &publishV1{ReqID: 2, Source: "s", FirstSeq: 11, Payloads: payloads},
			&Publish{ReqID: 2, Source: "s", FirstSeq: 11, Payloads: payloads}},
		{"Publish without payloads", &publishV1{ReqID: 2, Source: "s", FirstSeq: 11},
			&Publish{ReqID: 2, Source: "s", FirstSeq: 11}},
		{"FetchReply without CRC", &fetchReplyV1{ReqID: 4, Source: "s", Known: true, HighSeq: 9, LowSeq: 1, Through: 9, Msgs: []msgV1{{Seq: 1, Payload: []byte("x")}, {Seq: 2}}},
			&FetchReply{ReqID: 4, Source: "s", Known: true, HighSeq: 9, LowSeq: 1, Through: 9, Msgs: []Msg{{Seq: 1, Payload: []byte("x")}, {Seq: 2}}}},
		{"Fetch without Local", &fetchV1{ReqID: 4, Source: "s", From: 1, To: 1 << 40, MaxCount: -1, MaxBytes: 1 << 20},
			&Fetch{ReqID: 4, Source: "s", From: 1, To: 1 << 40, MaxCount: -1, MaxBytes: 1 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := libEncode(t, tt.old)
			back, err := Decode(append([]byte{byte(tt.cur.Type())}, old...))
			if err != nil {
				t.Fatalf("an older peer's frame does not decode: %v", err)
			}
			if !reflect.DeepEqual(back, tt.cur) {
				t.Fatalf("an older peer's frame decoded as\n %#v\nwant\n %#v", back, tt.cur)
			}
			frame, err := Encode(tt.cur)
			if err != nil {
				t.Fatal(err)
			}
			oldBack := reflect.New(reflect.TypeOf(tt.old).Elem()).Interface()
			if err := msgpack.Unmarshal(frame[5:], oldBack); err != nil {
				t.Fatalf("an older peer cannot decode % x: %v", frame[5:], err)
			}
			if !reflect.DeepEqual(oldBack, tt.old) {
				t.Fatalf("an older peer decodes\n %#v\nwant\n %#v", oldBack, tt.old)
			}
		})
	}
}

// Shutdown gained Token long ago and is sent with it; a client from before
// then sends ReqID alone, which now decodes (it did not: the library wants
// the exact field count).
func TestShutdownWithoutToken(t *testing.T) {
	back, err := Decode(append([]byte{byte(TypeShutdown)}, libEncode(t, &shutdownV1{ReqID: 3})...))
	if err != nil || !reflect.DeepEqual(back, &Shutdown{ReqID: 3}) {
		t.Fatalf("Decode = %#v, %v; want Shutdown 3 without a token", back, err)
	}
	frame, err := Encode(&Shutdown{ReqID: 3})
	if err != nil {
		t.Fatal(err)
	}
	var v2 shutdownV2
	if err := msgpack.Unmarshal(frame[5:], &v2); err != nil || v2.ReqID != 3 {
		t.Fatalf("a store that knows Token decodes % x as %+v, %v", frame[5:], v2, err)
	}
}

// Elements after the fields this version knows are skipped, so a later
// version may append more.
func TestLaterFieldsAreSkipped(t *testing.T) {
	type publishV9 struct {
		_msgpack  struct{} `msgpack:",as_array"`
		ReqID     uint64
		Source    string
		FirstSeq  uint64
		Payloads  [][]byte
		Checksums []uint32
		Later     string
		Latest    []int
	}
	type msgV9 struct {
		_msgpack struct{} `msgpack:",as_array"`
		Seq      uint64
		Payload  []byte
		CRC      uint32
		Later    map[string]int
	}
	type deliverV9 struct {
		_msgpack struct{} `msgpack:",as_array"`
		ReqID    uint64
		Source   string
		Through  uint64
		HighSeq  uint64
		LowSeq   uint64
		Msgs     []msgV9
	}
	p := libEncode(t, &publishV9{ReqID: 1, Source: "s", FirstSeq: 5, Payloads: [][]byte{[]byte("x")}, Checksums: []uint32{7}, Later: "?", Latest: []int{1, 2}})
	back, err := Decode(append([]byte{byte(TypePublish)}, p...))
	if want := (&Publish{ReqID: 1, Source: "s", FirstSeq: 5, Payloads: [][]byte{[]byte("x")}, Checksums: []uint32{7}}); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("Decode = %#v, %v; want %#v", back, err, want)
	}
	d := libEncode(t, &deliverV9{ReqID: 1, Source: "s", Through: 3, Msgs: []msgV9{{Seq: 3, Payload: []byte("y"), CRC: 9, Later: map[string]int{"a": 1}}}})
	back, err = Decode(append([]byte{byte(TypeDeliver)}, d...))
	if want := (&Deliver{ReqID: 1, Source: "s", Through: 3, Msgs: []Msg{{Seq: 3, Payload: []byte("y"), CRC: 9}}}); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("Decode = %#v, %v; want %#v", back, err, want)
	}
}

func TestAppendedFieldsRejectBadBodies(t *testing.T) {
	tests := []struct {
		name string
		body []byte
	}{
		{"Publish with three fields", []byte{byte(TypePublish), 0x93, 0x01, 0xa1, 's', 0x01}},
		{"checksum wider than 32 bits", []byte{byte(TypePublish), 0x95, 0x01, 0xa1, 's', 0x01, 0x91, 0xc4, 0x01, 'x', 0x91, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"checksums not an array", []byte{byte(TypePublish), 0x95, 0x01, 0xa1, 's', 0x01, 0x90, 0xa1, 'x'}},
		{"Msg with one field", []byte{byte(TypeFetchReply), 0x97, 0x01, 0xa1, 's', 0xc3, 0x01, 0x01, 0x01, 0x91, 0x91, 0x01}},
		{"CRC a string", []byte{byte(TypeFetchReply), 0x97, 0x01, 0xa1, 's', 0xc3, 0x01, 0x01, 0x01, 0x91, 0x93, 0x01, 0xc0, 0xa1, 'x'}},
		{"Local not a bool", []byte{byte(TypeFetch), 0x97, 0x01, 0xa1, 's', 0x01, 0x01, 0x00, 0x00, 0xa1, 'x'}},
		{"Shutdown empty", []byte{byte(TypeShutdown), 0x90}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := Decode(tt.body); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode(% x) = %#v, %v; want ErrMalformed", tt.body, m, err)
			}
		})
	}
}
