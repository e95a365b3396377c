package wire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"umstore/internal/testpki"
)

// A payload of MaxPayload bytes fits in a default frame whichever frame
// carries it: published, fetched back, or pushed to a subscriber, with the
// largest source name and sequence numbers.
func TestMaxPayloadFitsEveryFrameThatCarriesIt(t *testing.T) {
	payload := make([]byte, MaxPayload)
	source := strings.Repeat("s", 255) // repository.MaxSourceNameLen
	msgs := []Msg{{Seq: math.MaxUint64, Payload: payload}}
	tests := []struct {
		name string
		m    Message
	}{
		{"Publish", &Publish{ReqID: math.MaxUint64, Source: source, FirstSeq: math.MaxUint64, Payloads: [][]byte{payload}}},
		{"FetchReply", &FetchReply{ReqID: math.MaxUint64, Source: source, Known: true, HighSeq: math.MaxUint64, LowSeq: math.MaxUint64, Through: math.MaxUint64, Msgs: msgs}},
		{"Deliver", &Deliver{ReqID: math.MaxUint64, Source: source, Through: math.MaxUint64, HighSeq: math.MaxUint64, LowSeq: math.MaxUint64, Msgs: msgs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := Encode(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if body := len(frame) - headerLen; body > DefaultMaxFrame {
				t.Fatalf("a %s carrying MaxPayload is %d bytes, over DefaultMaxFrame (%d)", tt.name, body, DefaultMaxFrame)
			}
		})
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// tlsPair returns the two ends of a loopback TLS connection, handshaken.
func tlsPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	files := testpki.New(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	rawClient, rawServer := tcpPair(t)
	tc := tls.Client(rawClient, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	ts := tls.Server(rawServer, &tls.Config{Certificates: []tls.Certificate{cert}})
	errc := make(chan error, 1)
	go func() { errc <- ts.Handshake() }()
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return tc, ts
}

// ReadTimed tells a frame that never began (the stream intact: a frame sent
// later reads whole) from one that began and trickled (the stream spoilt).
func TestReadTimedBounds(t *testing.T) {
	frame, err := Encode(&Probe{ReqID: 42})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("idle, then a frame", func(t *testing.T) {
		client, server := tcpPair(t)
		c := NewConn(server, 0)
		start := time.Now()
		_, err := c.ReadTimed(time.Now().Add(200*time.Millisecond), time.Second)
		if !errors.Is(err, ErrIdle) || !IsFatal(err) {
			t.Fatalf("nothing sent: got %v, want ErrIdle", err)
		}
		if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
			t.Fatalf("idle bound of 200ms met after %v", took)
		}
		if _, err := client.Write(frame); err != nil {
			t.Fatal(err)
		}
		m, err := c.ReadTimed(time.Now().Add(5*time.Second), time.Second)
		if p, ok := m.(*Probe); err != nil || !ok || p.ReqID != 42 {
			t.Fatalf("the frame after an idle timeout: %#v, %v", m, err)
		}
	})
	t.Run("idle over TLS, then a frame", func(t *testing.T) {
		// A read timeout leaves a TLS connection usable: a subscription's
		// connection re-arms its idle deadline over and over.
		client, server := tlsPair(t)
		c := NewConn(server, 0)
		for i := 0; i < 2; i++ {
			if _, err := c.ReadTimed(time.Now().Add(100*time.Millisecond), time.Second); !errors.Is(err, ErrIdle) {
				t.Fatalf("nothing sent over TLS: got %v, want ErrIdle", err)
			}
		}
		go client.Write(frame)
		m, err := c.ReadTimed(time.Now().Add(5*time.Second), time.Second)
		if p, ok := m.(*Probe); err != nil || !ok || p.ReqID != 42 {
			t.Fatalf("the frame after idle timeouts over TLS: %#v, %v", m, err)
		}
	})
	t.Run("a trickled frame", func(t *testing.T) {
		client, server := tcpPair(t)
		c := NewConn(server, 0)
		go func() {
			for _, b := range frame {
				if _, err := client.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		start := time.Now()
		_, err := c.ReadTimed(time.Time{}, 300*time.Millisecond)
		if !errors.Is(err, ErrSlowFrame) {
			t.Fatalf("a frame at 10 bytes a second: got %v, want ErrSlowFrame", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("frame bound of 300ms met after %v", took)
		}
	})
	t.Run("no bounds", func(t *testing.T) {
		client, server := tcpPair(t)
		c := NewConn(server, 0)
		go func() {
			time.Sleep(300 * time.Millisecond)
			client.Write(frame[:3])
			time.Sleep(300 * time.Millisecond)
			client.Write(frame[3:])
		}()
		m, err := c.ReadTimed(time.Time{}, 0)
		if p, ok := m.(*Probe); err != nil || !ok || p.ReqID != 42 {
			t.Fatalf("without bounds: %#v, %v", m, err)
		}
	})
}
