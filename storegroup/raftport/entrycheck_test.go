package raftport

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"umstore/repository"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// verifyEntry is storegroup's check, on the real command encoding.
func verifyEntry(l *raft.Log) error { return repository.VerifyEntry(l.Data) }

// publishEntry is a raft log entry holding a Publish with its checksums;
// damaged flips one bit of its second payload.
func publishEntry(index uint64, damaged bool) *raft.Log {
	a, b := []byte("first payload"), []byte("second payload")
	data := repository.EncodePublish(repository.Publish{Source: "s", FirstSeq: index, Payloads: [][]byte{a, b}, Checksums: []uint32{repository.Checksum(a), repository.Checksum(b)}})
	if damaged {
		data[bytes.Index(data, b)+3] ^= 0x01
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

// indexes records the entries a check heard of.
type indexes struct {
	mu   sync.Mutex
	seen []uint64
}

func (x *indexes) add(_ string, index uint64, _ error) {
	x.mu.Lock()
	x.seen = append(x.seen, index)
	x.mu.Unlock()
}

func (x *indexes) has(index uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, i := range x.seen {
		if i == index {
			return true
		}
	}
	return false
}

// A damaged entry never crosses the raft port, over real TCP between
// three ports: a sender that checks (as every store does) does not send
// it, and hears of it as its own damage (Withheld); a receiver refuses
// one that arrives damaged (from a sender that does not check) before
// raft sees it, and hears of it as the sender's damage (Refused), the
// sender's call failing with the reason. Intact entries pass, plain and
// pipelined.
func TestDamagedEntriesNeverCrossThePort(t *testing.T) {
	addrs := map[string]string{"old": freeAddr(t), "leader": freeAddr(t), "follower": freeAddr(t)}
	var members []Member
	for name, addr := range addrs {
		members = append(members, Member{Name: name, RaftAddr: addr})
	}
	open := func(name string) *Transport {
		tr, err := Open(Config{
			Name: name, Group: 1, Members: members, Bind: addrs[name],
			HandshakeTimeout: 2 * time.Second, IdleTimeout: time.Minute,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), HLog: hclog.NewNullLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	var withheld, refused indexes
	old, leader, follower := open("old"), open("leader"), open("follower")
	old.CheckEntries(EntryCheck{}) // a sender that checks nothing: its damage reaches the wire
	leader.CheckEntries(EntryCheck{Verify: verifyEntry, Withheld: func(to raft.ServerID, index uint64, err error) { withheld.add(string(to), index, err) }})
	follower.CheckEntries(EntryCheck{Verify: verifyEntry, Refused: refused.add})
	delivered := make(chan uint64, 16)
	go func() {
		for rpc := range follower.Consumer() {
			req := rpc.Command.(*raft.AppendEntriesRequest)
			last := req.Entries[len(req.Entries)-1].Index
			delivered <- last
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true, LastLog: last}, nil)
		}
	}()

	tests := []struct {
		name      string
		from      *Transport
		pipelined bool
		damaged   bool
		want      string // "" (delivered), "withheld" or "refused"
	}{
		{"intact, from a sender that checks", leader, false, false, ""},
		{"intact, pipelined", leader, true, false, ""},
		{"intact, from a sender that does not check", old, false, false, ""},
		{"damaged, from a sender that checks", leader, false, true, "withheld"},
		{"damaged, pipelined from a sender that checks", leader, true, true, "withheld"},
		{"damaged, from a sender that does not check", old, false, true, "refused"},
		{"damaged, pipelined from a sender that does not check", old, true, true, "refused"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := uint64(10 * (i + 1))
			name := "old"
			if tt.from == leader {
				name = "leader"
			}
			req := &raft.AppendEntriesRequest{
				RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(name), Addr: []byte(addrs[name])},
				Term:      1, PrevLogEntry: index - 2, PrevLogTerm: 1,
				Entries: []*raft.Log{publishEntry(index-1, false), publishEntry(index, tt.damaged)},
			}
			var err error
			if tt.pipelined {
				p, perr := tt.from.AppendEntriesPipeline("follower", raft.ServerAddress(addrs["follower"]))
				if perr != nil {
					t.Fatal(perr)
				}
				defer p.Close()
				// As raft does: the answer is read from the pipeline's consumer.
				if _, err = p.AppendEntries(req, new(raft.AppendEntriesResponse)); err == nil {
					select {
					case f := <-p.Consumer():
						err = f.Error()
					case <-time.After(5 * time.Second):
						t.Fatal("no answer through the pipeline")
					}
				}
			} else {
				err = tt.from.AppendEntries("follower", raft.ServerAddress(addrs["follower"]), req, new(raft.AppendEntriesResponse))
			}
			switch tt.want {
			case "":
				if err != nil {
					t.Fatalf("intact entries refused: %v", err)
				}
				select {
				case got := <-delivered:
					if got != index {
						t.Fatalf("raft received entries up to %d, want %d", got, index)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("intact entries never reached raft")
				}
				return
			case "withheld":
				if !errors.Is(err, ErrEntryDamaged) || !withheld.has(index) || refused.has(index) {
					t.Fatalf("sending a damaged entry: %v (withheld %v, refused %v); want it withheld by the sender", err, withheld.seen, refused.seen)
				}
			case "refused":
				if err == nil || !strings.Contains(err.Error(), "arrived damaged") || !refused.has(index) || withheld.has(index) {
					t.Fatalf("sending a damaged entry: %v (withheld %v, refused %v); want it refused by the receiver", err, withheld.seen, refused.seen)
				}
			}
			select {
			case got := <-delivered:
				t.Fatalf("raft received entries up to %d, damaged", got)
			default:
			}
		})
	}
}
