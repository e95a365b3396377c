package wire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestGoldenFrames pins the protocol byte for byte with the frames in
// testdata/protocol/frames.txt, which docs/protocol.md cites and the Python
// client's tests read too (clients/python/tests). Commands:
//
//	encode type=Ack        the message as JSON (Go field names; []byte as
//	                       base64) -> the whole frame in hex; the frame
//	                       must also decode back to the message
//	decode type=Ack        a frame in hex -> the decoded message as JSON
//	decode-error           a frame in hex -> "malformed" or "unknown-type"
//
// Rewrite the expected outputs with
// `go test ./wire -run Golden -rewrite`, and read the diff: a changed frame
// is a changed protocol.
func TestGoldenFrames(t *testing.T) {
	encoded := map[Type]bool{}
	datadriven.RunTest(t, "../testdata/protocol/frames.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "encode":
			m := newNamed(t, d)
			encoded[m.Type()] = true
			if err := json.Unmarshal([]byte(d.Input), m); err != nil {
				d.Fatalf(t, "input: %v", err)
			}
			frame, err := Encode(m)
			if err != nil {
				d.Fatalf(t, "encode: %v", err)
			}
			back, err := Decode(frame[4:])
			if err != nil {
				d.Fatalf(t, "the encoded frame does not decode: %v", err)
			}
			if !reflect.DeepEqual(jsonOf(t, back), jsonOf(t, m)) {
				d.Fatalf(t, "round trip: %s, want %s", jsonOf(t, back), jsonOf(t, m))
			}
			return hexLines(frame)
		case "decode":
			want := newNamed(t, d)
			m, err := Decode(frameBody(t, d))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			if reflect.TypeOf(m) != reflect.TypeOf(want) {
				d.Fatalf(t, "decoded a %T, want a %T", m, want)
			}
			return jsonOf(t, m) + "\n"
		case "decode-error":
			_, err := Decode(frameBody(t, d))
			switch {
			case errors.Is(err, ErrUnknownType):
				return "unknown-type\n"
			case errors.Is(err, ErrMalformed):
				return "malformed\n"
			case err == nil:
				return "decoded\n"
			}
			return "error: " + err.Error() + "\n"
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
	// Every frame type has a golden frame: a client written from
	// docs/protocol.md can check itself against each one.
	for typ := Type(1); typ < 255; typ++ {
		if m := newMessage(typ); m != nil && !encoded[typ] {
			t.Errorf("frame type %d (%T) has no encode case in testdata/protocol/frames.txt", typ, m)
		}
	}
}

// newNamed returns an empty message of the type the case names.
func newNamed(t *testing.T, d *datadriven.TestData) Message {
	var name string
	d.ScanArgs(t, "type", &name)
	for typ := Type(1); typ < 255; typ++ {
		if m := newMessage(typ); m != nil && reflect.TypeOf(m).Elem().Name() == name {
			return m
		}
	}
	d.Fatalf(t, "no frame type named %q", name)
	return nil
}

// frameBody reads a whole frame in hex and returns it without its length
// prefix, checking the prefix.
func frameBody(t *testing.T, d *datadriven.TestData) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(d.Input), ""))
	if err != nil || len(b) < 4 {
		d.Fatalf(t, "input is not a frame in hex: %v", err)
	}
	if n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3]); n != len(b)-4 {
		d.Fatalf(t, "length prefix %d, but %d bytes follow it", n, len(b)-4)
	}
	return b[4:]
}

func jsonOf(t *testing.T, m Message) string {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hexLines prints a frame 16 bytes a line.
func hexLines(b []byte) string {
	var out strings.Builder
	for i := 0; i < len(b); i += 16 {
		line := b[i:min(i+16, len(b))]
		for j, c := range line {
			if j > 0 {
				out.WriteByte(' ')
			}
			fmt.Fprintf(&out, "%02x", c)
		}
		out.WriteByte('\n')
	}
	return out.String()
}
