package publisher_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"umstore/publisher"
	"umstore/wire"
)

// checksumStore is a one-group store that speaks just enough of the
// protocol for a publisher: it registers, records every Publish frame, and
// refuses the first one as damaged (CodeChecksum), as a store does when a
// payload no longer matches its checksum. Every later frame is acked.
type checksumStore struct {
	ln net.Listener

	mu     sync.Mutex
	frames []*wire.Publish
}

func startChecksumStore(t *testing.T) *checksumStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &checksumStore{ln: ln}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(nc) }()
		}
	}()
	return s
}

func (s *checksumStore) serve(nc net.Conn) {
	defer nc.Close()
	c := wire.NewConn(nc, 0)
	if _, err := wire.ServerHandshake(c, wire.Welcome{Store: "fake", Group: 1}, ""); err != nil {
		return
	}
	for {
		m, err := c.Read()
		if err != nil {
			return
		}
		var reply wire.Message
		switch m := m.(type) {
		case *wire.Ping:
			reply = &wire.Pong{ReqID: m.ReqID, Store: "fake", Group: 1, Groups: 1, Leading: true}
		case *wire.Register:
			reply = &wire.Registered{ReqID: m.ReqID, Source: m.Source, Group: 1, GroupID: "g1"}
		case *wire.Publish:
			s.mu.Lock()
			s.frames = append(s.frames, m)
			first := len(s.frames) == 1
			s.mu.Unlock()
			last := m.FirstSeq + uint64(len(m.Payloads)) - 1
			reply = &wire.Ack{ReqID: m.ReqID, Source: m.Source, FirstSeq: m.FirstSeq, LastSeq: last, HighSeq: last}
			if first {
				reply = &wire.Error{ReqID: m.ReqID, Code: wire.CodeChecksum, Message: "message 1 does not match its checksum"}
			}
		default:
			continue
		}
		if err := c.Send(reply); err != nil {
			return
		}
	}
}

// The publisher sends the CRC32C of every payload with it; a frame the
// store refuses as damaged is counted and sent again, and the messages
// become stable once the resend is acknowledged.
func TestPublisherSendsChecksumsAndResendsARefusedFrame(t *testing.T) {
	t.Parallel()
	s := startChecksumStore(t)
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "crc", [][]string{{s.ln.Addr().String()}}
	cfg.ReconnectDelay = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 300
	for i := 1; i <= n; i++ {
		if _, err := p.Send(ctx, []byte(fmt.Sprintf("payload %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("the messages did not become stable after the refused frame was sent again: %v", err)
	}
	if st := p.Stats(); st.DamagedFrames != 1 || st.Stable != n {
		t.Fatalf("stats %+v, want 1 damaged frame and %d stable", st, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.frames {
		if len(f.Checksums) != len(f.Payloads) {
			t.Fatalf("frame from %d carries %d checksums for %d payloads", f.FirstSeq, len(f.Checksums), len(f.Payloads))
		}
		for i, b := range f.Payloads {
			seq := f.FirstSeq + uint64(i)
			if f.Checksums[i] != wire.Checksum(b) || string(b) != fmt.Sprintf("payload %d", seq) {
				t.Fatalf("message %d: payload %q with checksum %08x, want its CRC32C %08x", seq, b, f.Checksums[i], wire.Checksum(b))
			}
		}
	}
	resent := false
	for _, f := range s.frames[1:] {
		resent = resent || f.FirstSeq == s.frames[0].FirstSeq
	}
	if !resent {
		t.Fatalf("the refused frame (from %d) was not sent again", s.frames[0].FirstSeq)
	}
}
