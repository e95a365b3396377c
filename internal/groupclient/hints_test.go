package groupclient

import (
	"testing"

	"umstore/wire"
)

// A new client of a group starts at the leader another client of the
// process found (a thousand sources started at once must not each race
// through the list); a store that says it no longer leads and names no one
// is forgotten for them too.
func TestClientsOfAProcessShareTheLeader(t *testing.T) {
	var leader *fakeStore
	follower := newFakeStore(t, redirectTo(&leader))
	leader = newFakeStore(t, answer(&wire.SourceList{}))
	addrs := []string{follower.addr(), leader.addr()}

	first := New(1, addrs, dialer())
	defer first.Close()
	if _, err := first.Sources(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	second := New(1, []string{follower.addr(), leader.addr()}, dialer())
	defer second.Close()
	if _, err := second.Sources(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if d, _ := follower.counts(); d != 1 {
		t.Fatalf("follower dialed %d times; want 1 (only by the first client)", d)
	}
	if second.Leader() != leader.addr() {
		t.Fatalf("second client's leader %q, want %s", second.Leader(), leader.addr())
	}

	if got := New(1, []string{leader.addr(), follower.addr()}, dialer()).sharedHint(); got != leader.addr() {
		t.Fatalf("the same stores listed in another order got shared leader %q, want %s", got, leader.addr())
	}
	other := New(2, addrs, dialer()) // another group index: not the same group
	if got := other.sharedHint(); got != "" {
		t.Fatalf("group 2 was given group 1's leader %q", got)
	}

	second.Redirected(&wire.NotLeader{}) // the leader stepped down, no successor yet
	if got := New(1, addrs, dialer()).sharedHint(); got != "" {
		t.Fatalf("shared leader %q after it said it no longer leads", got)
	}
}
