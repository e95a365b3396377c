package wire

import (
	"bytes"
	"net"
	"testing"
)

// FuzzDecode feeds arbitrary frame bodies to the decoder: it must never
// panic, and whatever it accepts must encode again.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		frame, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[4:])
	}
	f.Add([]byte{})
	f.Add([]byte{byte(TypePublish), 0x94, 0x01, 0xa1, 's', 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		if err != nil {
			return
		}
		if _, err := Encode(m); err != nil {
			t.Fatalf("decoded %#v but cannot encode it: %v", m, err)
		}
	})
}

// FuzzConnRead feeds an arbitrary byte stream to a Conn with a small frame
// limit: reading must end in an error, never a panic or a huge allocation.
func FuzzConnRead(f *testing.F) {
	var stream bytes.Buffer
	for _, m := range sampleMessages() {
		frame, _ := Encode(m)
		stream.Write(frame)
	}
	f.Add(stream.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		go func() {
			a.Write(data)
			a.Close()
		}()
		c := NewConn(b, 4096)
		for i := 0; i < 1000; i++ {
			if _, err := c.Read(); IsFatal(err) {
				break
			}
		}
		b.Close()
	})
}
