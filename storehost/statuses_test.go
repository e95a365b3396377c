package storehost

import (
	"context"
	"testing"

	"umstore/storegroup"
)

// A status page reads stores one after the other. Here group 1's turn is
// handed from G1S2 to G1S3 between the read of G1S2 (still catching up)
// and that of G1S3 (now catching up): a single read shows both catching up
// at once. oneView must read again and show only G1S3.
func TestStatusesAreOneViewOfTheCatchUpTurns(t *testing.T) {
	adm := storegroup.NewHostAdmission()
	ctx := context.Background()
	releaseS2, err := adm.Acquire(ctx, 1, "G1S2")
	if err != nil {
		t.Fatal(err)
	}
	handOn := func() {
		releaseS2()
		if _, err := adm.Acquire(ctx, 1, "G1S3"); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) storegroup.Status {
		return storegroup.Status{Name: name, Group: 1, CatchingUp: adm.CatchingUp()[1] == name}
	}
	reads := 0
	read := func() []storegroup.Status {
		reads++
		s2 := status("G1S2")
		if reads == 1 {
			handOn()
		}
		return []storegroup.Status{s2, status("G1S3")}
	}
	got := oneView(adm.Turns, read)
	var catching []string
	for _, st := range got {
		if st.CatchingUp {
			catching = append(catching, st.Name)
		}
	}
	if len(catching) != 1 || catching[0] != "G1S3" {
		t.Errorf("stores shown catching up: %v, want [G1S3] (reads: %d)", catching, reads)
	}
	if reads != 2 {
		t.Errorf("read %d times, want 2 (once more after the hand-off)", reads)
	}
}

// The turns of a host that gives none leave one read enough.
func TestStatusesReadOnceWithoutTurns(t *testing.T) {
	reads := 0
	oneView(func() uint64 { return 7 }, func() []storegroup.Status { reads++; return nil })
	if reads != 1 {
		t.Errorf("read %d times, want 1", reads)
	}
}
