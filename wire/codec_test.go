package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"testing"
)

func sampleMessages() []Message {
	return []Message{
		&Hello{Version: Version, Client: "umpub", Token: "t"},
		&Welcome{Version: Version, Store: "G1S1", Group: 1},
		&Error{ReqID: 7, Code: CodeBadRequest, Message: "no"},
		&Register{ReqID: 1, Source: "orders", Session: "s1"},
		&Registered{ReqID: 1, Source: "orders", Group: 2, GroupID: "abc", HighSeq: 10, LowSeq: 1},
		&Publish{ReqID: 2, Source: "orders", FirstSeq: 11, Payloads: [][]byte{[]byte("a"), {}, []byte("ccc")}},
		&Publish{ReqID: 3, Source: "orders", FirstSeq: 14, Payloads: [][]byte{[]byte("d"), []byte("ee")}, Checksums: []uint32{Checksum([]byte("d")), Checksum([]byte("ee"))}},
		&Ack{ReqID: 2, Source: "orders", FirstSeq: 11, LastSeq: 13, HighSeq: 13},
		&NotLeader{ReqID: 3, Leader: "127.0.0.1:15012", LeaderName: "G1S2"},
		&Fetch{ReqID: 4, Source: "orders", From: 1, To: 100, MaxCount: 10, MaxBytes: 1 << 20},
		&Fetch{ReqID: 5, Source: "orders", From: 7, To: 7, MaxCount: 1, Local: true},
		&FetchReply{ReqID: 4, Source: "orders", Known: true, HighSeq: 13, LowSeq: 1, Through: 4, Msgs: []Msg{{Seq: 1, Payload: []byte("x")}}},
		&FetchReply{ReqID: 5, Source: "orders", Known: true, HighSeq: 13, LowSeq: 1, Through: 4, Msgs: []Msg{{Seq: 1, Payload: []byte("x"), CRC: Checksum([]byte("x"))}, {Seq: 2, Payload: []byte("y")}}},
		&Probe{ReqID: 5},
		&Sources{ReqID: 6},
		&SourceList{ReqID: 6, Group: 2, GroupID: "g", Sources: []SourceState{{Name: "s", HighSeq: 9, LowSeq: 1, Count: 7, Gaps: []Range{{From: 3, To: 4}}}}},
		&Subscribe{ReqID: 7, Source: "s", From: 5, Receiver: "r1"},
		&Deliver{ReqID: 7, Source: "s", Through: 6, HighSeq: 9, LowSeq: 1, Msgs: []Msg{{Seq: 5, Payload: []byte("p")}}},
		&Consumed{ReqID: 8, Source: "s", Receiver: "r1", Seq: 5},
		&OK{ReqID: 8},
		&Shutdown{ReqID: 9},
		&Shutdown{ReqID: 10, Token: "op"},
		&KeepAlive{Source: "s", Session: "abc", Leaving: true},
		&Nak{ReqID: 2, Source: "orders", FirstSeq: 11, LastSeq: 13, HighSeq: 13, Lost: []Range{{From: 12, To: 12}}},
		&RegisterReceiver{ReqID: 10, Source: "s", Receiver: "app1", Session: "r-1", Paced: true},
		&ReceiverRegistered{ReqID: 10, Source: "s", Receiver: "app1", Group: 1, GroupID: "g", Known: true, Recorded: true, Consumed: 1000, HighSeq: 3000, LowSeq: 1, Pacing: PacingBlocking},
		&ConsumedAs{ReqID: 11, Source: "s", Receiver: "app1", Session: "r-1", Seq: 1001, Leaving: true},
		&ReceiverQuery{ReqID: 12, Source: "s", Receiver: "app1"},
		&ReceiverReport{ReqID: 12, Store: "G1S2", Group: 1, Leader: true, AppliedIndex: 77, Sources: []SourceReceivers{{Source: "s", HighSeq: 3000, Pacing: PacingNonBlocking, Receivers: []ReceiverState{{Name: "app1", Consumed: 1001, Paced: true, Active: true, LastActivityUnixNano: 1 << 60}}}}},
		&RegisterSource{ReqID: 13, Source: "s", Session: "p-1", Pacing: PacingBlocking, Delivery: true},
		&Delivery{Source: "s", Receivers: []ReceiverState{{Name: "app1", Consumed: 1001}}},
		&HeldBack{Source: "s", Reason: "at the retention limit"},
		&Ping{ReqID: 4},
		&Pong{ReqID: 4, Store: "G1S1", Group: 1, Groups: 2, Leading: true, Leader: "127.0.0.1:15011", LeaderName: "G1S1", AppliedIndex: 9, LastIndex: 10, PolicyDigest: "ab12", Policy: "a=1 b=2", FormatLevel: 2, ActiveLevel: 1, Version: "v0.2.0 (commit 0123456789ab)"},
		&RangeDigest{ReqID: 5, Source: "s", From: 1, To: 100, MaxCount: 10},
		&RangeDigestReply{ReqID: 5, Source: "s", Known: true, Through: 10, Count: 10, Sum: []byte{1, 2, 3}},
		&ProbeReply{ReqID: 5, Store: "G1S1", Group: 1, GroupID: "abc", HasState: true, State: "Leader", AppliedIndex: 9, LastIndex: 9, LastTerm: 2, CatchingUp: true, KnownGroups: []GroupIdentity{{Index: 2, GroupID: "def"}}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		t.Run(reflect.TypeOf(m).Elem().Name(), func(t *testing.T) {
			frame, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
				t.Fatalf("length prefix %d, frame body %d", got, len(frame)-4)
			}
			back, err := Decode(frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(m), normalize(back)) {
				t.Fatalf("round trip changed the message:\n sent %#v\n got  %#v", m, back)
			}
		})
	}
}

// normalize maps empty and nil byte slices to the same value: msgpack does
// not distinguish them and neither does the protocol.
func normalize(m Message) Message {
	if p, ok := m.(*Publish); ok {
		c := *p
		c.Payloads = nil
		for _, b := range p.Payloads {
			if len(b) == 0 {
				b = nil
			}
			c.Payloads = append(c.Payloads, b)
		}
		return &c
	}
	return m
}

func TestDecodeRejects(t *testing.T) {
	good, _ := Encode(&Ack{ReqID: 1, Source: "s", FirstSeq: 1, LastSeq: 2})
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrMalformed},
		{"unknown type", []byte{200, 0x90}, ErrUnknownType},
		{"type zero", []byte{0}, ErrUnknownType},
		{"truncated body", good[4 : len(good)-2], ErrMalformed},
		{"wrong body kind", []byte{byte(TypeAck), 0xa3, 'a', 'b', 'c'}, ErrMalformed},
		{"huge array claim", []byte{byte(TypePublish), 0x94, 0x01, 0xa1, 's', 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}, ErrMalformed},
		{"huge bin claim", []byte{byte(TypePublish), 0x94, 0x01, 0xa1, 's', 0x01, 0x91, 0xc6, 0xff, 0xff, 0xff, 0xff}, ErrMalformed},
		{"deep nesting", append([]byte{byte(TypeProbe)}, bytes.Repeat([]byte{0x91}, 100)...), ErrMalformed},
		{"invalid byte", []byte{byte(TypeProbe), 0xc1}, ErrMalformed},
		{"wrong field type", []byte{byte(TypeAck), 0x92, 0xa1, 'x', 0xa1, 'y'}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%x) = %v, want %v", tt.frame, err, tt.want)
			}
		})
	}
}

func TestConnOversizedFrame(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 1<<30)
		a.Write(hdr[:])
	}()
	c := NewConn(b, 1024)
	_, err := c.Read()
	if !errors.Is(err, ErrFrameTooLarge) || !IsFatal(err) {
		t.Fatalf("Read = %v, want fatal ErrFrameTooLarge", err)
	}
}

func TestConnSkipsBadFrameAndGoesOn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	good, _ := Encode(&Probe{ReqID: 9})
	bad := []byte{0, 0, 0, 3, 250, 1, 2} // unknown type 250, two body bytes
	go func() {
		a.Write(append(bad, good...))
	}()
	c := NewConn(b, 0)
	if _, err := c.Read(); !errors.Is(err, ErrUnknownType) || IsFatal(err) {
		t.Fatalf("first Read = %v, want non-fatal ErrUnknownType", err)
	}
	m, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := m.(*Probe); !ok || p.ReqID != 9 {
		t.Fatalf("second Read = %#v, want Probe 9", m)
	}
}

// Decoded payloads must not alias the connection's read buffer, which is
// reused by the next Read.
func TestDecodedPayloadsDoNotAliasBuffer(t *testing.T) {
	frame, _ := Encode(&Publish{Source: "s", FirstSeq: 1, Payloads: [][]byte{[]byte("hello")}})
	body := bytes.Clone(frame[4:])
	m, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'X'
	}
	if got := string(m.(*Publish).Payloads[0]); got != "hello" {
		t.Fatalf("payload changed with the buffer: %q", got)
	}
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		name    string
		version int
		wantErr error
	}{
		{"same version", Version, nil},
		{"future version", Version + 1, ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			srvErr := make(chan error, 1)
			go func() {
				_, err := ServerHandshake(NewConn(b, 0), Welcome{Store: "G1S1", Group: 1}, "")
				srvErr <- err
			}()
			cc := NewConn(a, 0)
			if err := cc.Send(&Hello{Version: tt.version, Client: "test"}); err != nil {
				t.Fatal(err)
			}
			m, err := cc.Read()
			if err != nil {
				t.Fatal(err)
			}
			serr := <-srvErr
			if tt.wantErr == nil {
				w, ok := m.(*Welcome)
				if !ok || w.Store != "G1S1" || serr != nil {
					t.Fatalf("got %#v, server err %v", m, serr)
				}
				return
			}
			e, ok := m.(*Error)
			if !ok || e.Code != CodeVersion || !errors.Is(serr, tt.wantErr) {
				t.Fatalf("got %#v, server err %v; want version error", m, serr)
			}
		})
	}
}
