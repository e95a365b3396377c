package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// Frames grow by appending fields: a decoder takes a longer array (a newer
// peer's) by ignoring the fields it does not know, and a shorter one (an
// older peer's) with the missing fields zero, at the top level and inside
// nested messages.
func TestDecodeAcceptsAppendedAndMissingFields(t *testing.T) {
	tests := []struct {
		name string
		body []byte // type byte and msgpack body, written out by hand
		want Message
	}{
		{"Ack with a seventh field",
			[]byte{byte(TypeAck), 0x97, 0x02, 0xa1, 's', 0x0b, 0x0d, 0x0d, 0x00, 0x92, 0x01, 0xa1, 'x'},
			&Ack{ReqID: 2, Source: "s", FirstSeq: 11, LastSeq: 13, HighSeq: 13}},
		{"Shutdown without its Token (an older client)",
			[]byte{byte(TypeShutdown), 0x91, 0x09},
			&Shutdown{ReqID: 9}},
		{"Msg with its checksum and a later field, inside Deliver",
			[]byte{byte(TypeDeliver), 0x96, 0x07, 0xa1, 's', 0x06, 0x09, 0x01,
				0x91, 0x94, 0x05, 0xc4, 0x01, 'p', 0xce, 0xde, 0xad, 0xbe, 0xef, 0xc3},
			&Deliver{ReqID: 7, Source: "s", Through: 6, HighSeq: 9, LowSeq: 1, Msgs: []Msg{{Seq: 5, Payload: []byte("p"), CRC: 0xdeadbeef}}}},
		{"Msg without its checksum (an older store), inside Deliver",
			[]byte{byte(TypeDeliver), 0x96, 0x07, 0xa1, 's', 0x06, 0x09, 0x01,
				0x91, 0x92, 0x05, 0xc4, 0x01, 'p'},
			&Deliver{ReqID: 7, Source: "s", Through: 6, HighSeq: 9, LowSeq: 1, Msgs: []Msg{{Seq: 5, Payload: []byte("p")}}}},
		{"Publish without checksums (an older client)",
			[]byte{byte(TypePublish), 0x94, 0x02, 0xa1, 's', 0x01, 0x91, 0xc4, 0x01, 'p'},
			&Publish{ReqID: 2, Source: "s", FirstSeq: 1, Payloads: [][]byte{[]byte("p")}}},
		{"SourceState without Gaps, inside SourceList",
			[]byte{byte(TypeSourceList), 0x94, 0x06, 0x02, 0xa1, 'g',
				0x91, 0x94, 0xa1, 's', 0x09, 0x01, 0x07},
			&SourceList{ReqID: 6, Group: 2, GroupID: "g", Sources: []SourceState{{Name: "s", HighSeq: 9, LowSeq: 1, Count: 7}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// A body whose arrays already have this version's lengths is decoded as it
// is: conform returns the same bytes, without copying them.
func TestConformLeavesExactBodiesAlone(t *testing.T) {
	for _, m := range sampleMessages() {
		frame, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		body := frame[5:]
		got, err := conform(body, shapes[m.Type()])
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if &got[0] != &body[0] || !bytes.Equal(got, body) {
			t.Fatalf("%T: conform copied or changed an exact body", m)
		}
	}
}

// The shapes the decoder conforms to are the Go types' layouts.
func TestShapes(t *testing.T) {
	for typ, want := range map[Type]string{
		TypeAck:        "Ack[6]",
		TypeFetchReply: "FetchReply[9: 6=[]Msg[3] 8=[]Range[2]]",
		TypeSourceList: "SourceList[5: 3=[]SourceState[8: 4=[]Range[2] 6=[]Range[2]]]",
		TypeNak:        "Nak[6: 5=[]Range[2]]",
	} {
		if got := shapes[typ].String(); got != want {
			t.Errorf("shape of type %d = %s, want %s", typ, got, want)
		}
	}
}
