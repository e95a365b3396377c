package main

import "testing"

// upgrade-host flips a host between the binaries until both hosts have
// run the new one at once; from then on it restarts hosts on the new one
// only (the groups' level may be final).
func TestUpgradeHostBinaries(t *testing.T) {
	a, b := &host{name: "A", bin: "prev"}, &host{name: "B", bin: "prev"}
	c := &cluster{bin: "new", previous: "prev", hosts: []*host{a, b}}
	steps := []struct {
		h    *host
		want string
	}{
		{a, "new"},  // A upgraded
		{a, "prev"}, // A back: a downgrade before finalization
		{b, "new"},  // B upgraded, A on the previous
		{a, "new"},  // both on the new binary: final
		{b, "new"},  // no going back
		{a, "new"},
	}
	for i, s := range steps {
		to, why := c.otherBinary(s.h)
		if to != s.want {
			t.Fatalf("step %d (host %s on %s): restarts on %s (%s), want %s", i, s.h.name, s.h.binary(), to, why, s.want)
		}
		s.h.setBin(to)
		c.noteBinaries()
	}
	if !c.final {
		t.Error("both hosts ran the new binary, but the deployment is not final")
	}
	if upgrades([]Fault{{Kind: KillHost}}) || !upgrades([]Fault{{Kind: KillHost}, {Kind: UpgradeHost}}) {
		t.Error("upgrades misreads a plan")
	}
}
