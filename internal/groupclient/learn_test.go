package groupclient

import (
	"slices"
	"sync"
	"testing"

	"umstore/wire"
)

// A client whose list names only a replaced host's old address and a store
// that is gone learns from the store it reaches where the group recorded
// the moved stores, and once that store is gone too, reaches the group at
// the address it learned. A move the group did not record, and an address
// the list already holds, are not kept.
func TestLearnFindsMovedStores(t *testing.T) {
	moved := newFakeStore(t, answer(&wire.SourceList{}))
	unrecorded := "127.0.0.1:1" // nothing listens there
	gone := "127.0.0.1:2"
	var stayed *fakeStore
	stayed = newFakeStore(t, func(_ int, req wire.Message) wire.Message {
		if _, ok := req.(*wire.Members); ok {
			return &wire.MemberList{Store: "S1", Group: 0, Members: []wire.MemberAddr{
				{Name: "S1", ClientAddr: stayed.addr()},
				{Name: "S2", ClientAddr: moved.addr(), Moved: true, Recorded: true},
				{Name: "S3", ClientAddr: unrecorded, Moved: true},
				{Name: "S4", ClientAddr: gone, Moved: true, Recorded: true}, // already in the list
			}}
		}
		return &wire.SourceList{}
	})
	c := New(1, []string{stayed.addr(), gone}, dialer())
	defer c.Close()
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Learn(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := c.learnedAddrs(); !slices.Equal(got, []string{moved.addr()}) {
		t.Fatalf("learned %v, want only the recorded move %s", got, moved.addr())
	}
	if err := c.Learn(testCtx(t)); err != nil { // too soon: not asked again
		t.Fatal(err)
	}
	if d, r := stayed.counts(); d != 2 || r != 2 {
		t.Fatalf("the store that stayed: %d dials, %d requests; want 2 and 2 (one Sources, one Members)", d, r)
	}
	// The store that stayed goes too: the group is found where it moved.
	stayed.ln.Close()
	c.Close()
	if _, err := c.Sources(testCtx(t)); err != nil {
		t.Fatalf("with every listed store gone: %v", err)
	}
	if c.Leader() != moved.addr() {
		t.Fatalf("answered by %s, want the moved store at %s", c.Leader(), moved.addr())
	}
}

// The Clients of a process for one group ask it where its members listen
// once per learnEvery between them: a second Client asking just after the
// first takes what the first learnt, and the store hears one question.
func TestLearnIsSharedByTheClientsOfAProcess(t *testing.T) {
	moved := newFakeStore(t, answer(&wire.SourceList{}))
	var members int
	var mu sync.Mutex
	var leader *fakeStore
	leader = newFakeStore(t, func(_ int, req wire.Message) wire.Message {
		if _, ok := req.(*wire.Members); ok {
			mu.Lock()
			members++
			mu.Unlock()
			return &wire.MemberList{Store: "S1", Members: []wire.MemberAddr{
				{Name: "S1", ClientAddr: leader.addr()},
				{Name: "S2", ClientAddr: moved.addr(), Moved: true, Recorded: true},
			}}
		}
		return &wire.SourceList{}
	})
	list := []string{leader.addr(), "127.0.0.1:2"}
	for i := range 2 {
		c := New(1, list, dialer())
		defer c.Close()
		if _, err := c.Sources(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := c.Learn(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if got := c.learnedAddrs(); !slices.Equal(got, []string{moved.addr()}) {
			t.Fatalf("client %d learned %v, want %s", i+1, got, moved.addr())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if members != 1 {
		t.Fatalf("the group was asked %d times by two clients of one process within learnEvery, want once", members)
	}
}
