package storegroup

import (
	"net"
	"reflect"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"umstore/repository"
	"umstore/wire"
)

// bookFor is the address book of G1S1 in a two-group deployment: G1S1,
// G1S2 on 10.0.0.1, G1S3 on 10.0.0.2; group 2 likewise.
func bookFor(t *testing.T) *memberBook {
	t.Helper()
	m := func(name, host string, port int) Member {
		return Member{Name: name, RaftAddr: net.JoinHostPort(host, strconv.Itoa(14000+port)), ClientAddr: net.JoinHostPort(host, strconv.Itoa(15000+port))}
	}
	cfg := Config{Name: "G1S1", Group: 1,
		Members:     []Member{m("G1S1", "10.0.0.1", 11), m("G1S2", "10.0.0.1", 12), m("G1S3", "10.0.0.2", 13)},
		OtherGroups: []PeerGroup{{Index: 2, Members: []Member{m("G2S1", "10.0.0.1", 21), m("G2S2", "10.0.0.2", 22), m("G2S3", "10.0.0.2", 23)}}},
	}
	return newMemberBook(cfg)
}

// The book's precedence: this store is always where it listens; a member
// is where this store accepted it, then where the log records it, then
// where the file says; the log's record of an accepted move, or a later
// one, ends the acceptance.
func TestMemberBookPrecedence(t *testing.T) {
	t.Parallel()
	b := bookFor(t)
	g12 := Member{Name: "G1S2", RaftAddr: "10.0.0.4:14012", ClientAddr: "10.0.0.4:15012"}
	g12b := Member{Name: "G1S2", RaftAddr: "10.0.0.5:14012", ClientAddr: "10.0.0.5:15012"}
	rec := func(ms ...Member) []repository.MemberAddressRecord {
		var out []repository.MemberAddressRecord
		for _, m := range ms {
			out = append(out, repository.MemberAddressRecord{Name: m.Name, RaftAddr: m.RaftAddr, ClientAddr: m.ClientAddr})
		}
		return out
	}
	at := func(name string) Member { m, _ := b.member(name); return m }
	file, _ := b.fileMember("G1S2")

	if at("G1S2") != file || len(b.moved()) != 0 {
		t.Fatalf("before any move: %+v, moved %+v", at("G1S2"), b.moved())
	}
	// A record of the store itself never moves it: it listens where it
	// listens.
	self := Member{Name: "G1S1", RaftAddr: "10.0.0.9:1", ClientAddr: "10.0.0.9:2"}
	b.refresh(rec(self))
	if m := at("G1S1"); m != b.self {
		t.Fatalf("the store's own entry follows a record: %+v", m)
	}

	b.accept(g12)
	if at("G1S2") != g12 || b.durable(g12) || !reflect.DeepEqual(b.unrecorded(), []Member{g12}) {
		t.Fatalf("accepted move: at %+v durable %v unrecorded %+v", at("G1S2"), b.durable(g12), b.unrecorded())
	}
	if addr, _ := b.ServerAddr(raft.ServerID("G1S2")); string(addr) != g12.RaftAddr {
		t.Fatalf("raft dials G1S2 at %s", addr)
	}
	if mv := b.moved(); len(mv) != 1 || mv[0].Recorded || mv[0].FileClientAddr != file.ClientAddr {
		t.Fatalf("moved: %+v", mv)
	}
	// An unchanged, older record does not end the acceptance.
	b.refresh(rec(self))
	if at("G1S2") != g12 {
		t.Fatal("an unrelated refresh dropped the accepted move")
	}
	// The log records it: recorded, durable, nothing left to propose.
	b.refresh(rec(self, g12))
	if at("G1S2") != g12 || !b.durable(g12) || len(b.unrecorded()) != 0 {
		t.Fatalf("recorded move: at %+v durable %v unrecorded %+v", at("G1S2"), b.durable(g12), b.unrecorded())
	}
	// Accepted again elsewhere, then the log records something later
	// still: the log has the last word.
	b.accept(g12b)
	if at("G1S2") != g12b {
		t.Fatal("a later accepted move is not used")
	}
	g12c := Member{Name: "G1S2", RaftAddr: "10.0.0.6:14012", ClientAddr: "10.0.0.6:15012"}
	b.refresh(rec(self, g12c))
	if at("G1S2") != g12c || len(b.unrecorded()) != 0 {
		t.Fatalf("after a later record: %+v, unrecorded %+v", at("G1S2"), b.unrecorded())
	}
	// A record of a name that is no member is ignored.
	b.refresh(rec(self, g12c, Member{Name: "G9S9", RaftAddr: "x:1", ClientAddr: "x:2"}))
	if _, ok := b.member("G9S9"); ok {
		t.Fatal("a stranger's record made it a member")
	}
	if _, err := b.ServerAddr("G9S9"); err == nil {
		t.Fatal("raft got an address for a server that is no member")
	}
}

// What a store learns of another group: a recorded address always, an
// accepted-only one unless a recorded one is known, never what is merely
// the other store's file, nor names that are not of that group.
func TestMemberBookLearnsOtherGroups(t *testing.T) {
	t.Parallel()
	b := bookFor(t)
	g21 := func(host string) (string, string) { return host + ":14021", host + ":15021" }
	addr := func() Member {
		for _, g := range b.others() {
			for _, m := range g.Members {
				if m.Name == "G2S1" {
					return m
				}
			}
		}
		return Member{}
	}
	file := addr()
	r4, c4 := g21("10.0.0.4")
	r5, c5 := g21("10.0.0.5")
	r6, c6 := g21("10.0.0.6")
	steps := []struct {
		name string
		list []wire.MemberAddr
		want string // G2S1's client address afterwards
	}{
		{"the other store's file alone", []wire.MemberAddr{{Name: "G2S1", RaftAddr: r4, ClientAddr: c4}}, file.ClientAddr},
		{"accepted there", []wire.MemberAddr{{Name: "G2S1", RaftAddr: r4, ClientAddr: c4, Moved: true}}, c4},
		{"recorded there", []wire.MemberAddr{{Name: "G2S1", RaftAddr: r5, ClientAddr: c5, Moved: true, Recorded: true}}, c5},
		{"accepted elsewhere does not beat recorded", []wire.MemberAddr{{Name: "G2S1", RaftAddr: r6, ClientAddr: c6, Moved: true}}, c5},
		{"a recorded return to the file's address", []wire.MemberAddr{{Name: "G2S1", RaftAddr: file.RaftAddr, ClientAddr: file.ClientAddr, Recorded: true}}, file.ClientAddr},
		{"a name of no store of the group", []wire.MemberAddr{{Name: "G1S2", RaftAddr: r6, ClientAddr: c6, Moved: true, Recorded: true}}, file.ClientAddr},
	}
	for _, st := range steps {
		b.learn(2, st.list)
		if got := addr().ClientAddr; got != st.want {
			t.Fatalf("%s: G2S1 at %s, want %s", st.name, got, st.want)
		}
	}
	if m, _ := b.member("G1S2"); m.RaftAddr == r6 {
		t.Fatal("another group's list moved a member of this group")
	}
	b.learn(7, []wire.MemberAddr{{Name: "G2S1", RaftAddr: r6, ClientAddr: c6, Recorded: true}})
	if addr().ClientAddr != file.ClientAddr {
		t.Fatal("a list for a group of no such index moved a store")
	}
}
