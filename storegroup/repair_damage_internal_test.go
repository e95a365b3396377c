package storegroup

import (
	"log/slog"
	"testing"

	"umstore/wire"
)

// A copy another group sends whose payload fails its checksum is never
// proposed; a copy without a checksum (a group older than checksums) is
// taken as it is, and its run is proposed without checksums.
func TestRepairProposesIntactCopiesOnly(t *testing.T) {
	t.Parallel()
	rp := &repairer{damage: newDamageRepairer(damageDeps{log: slog.New(slog.DiscardHandler)})}
	good := []byte("good")
	msgs := []wire.Msg{
		{Seq: 1, Payload: good, CRC: wire.Checksum(good)},
		{Seq: 2, Payload: []byte("bad!"), CRC: wire.Checksum([]byte("bad?"))},
		{Seq: 3, Payload: good},
	}
	kept := rp.intactOnly("s", msgs, []string{"127.0.0.1:1"})
	if len(kept) != 2 || kept[0].Seq != 1 || kept[1].Seq != 3 {
		t.Fatalf("kept %+v, want messages 1 and 3", kept)
	}
	if st := rp.damage.Status(); st.CopiesRefused != 1 {
		t.Fatalf("damage status %+v, want one copy refused", st)
	}
	if msgs[1].Seq != 2 {
		t.Fatal("intactOnly changed the reply it was given")
	}
}
