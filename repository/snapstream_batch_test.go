package repository

import (
	"bytes"
	"testing"
)

// A stream whose messages span many restore transactions, with payloads
// empty, small, larger than a run and larger than what a run's buffer has
// left, and a gap in the sequence numbers, restores to the same repository
// (the reader of the stream and the writer of the file run side by side).
func TestRestoreAcrossManyTransactions(t *testing.T) {
	old := restoreBatchBytes
	restoreBatchBytes = 16 << 10
	t.Cleanup(func() { restoreBatchBytes = old })

	var cmds []any
	cmds = append(cmds, InitGroup{GroupID: "g", Index: 1}, Register{Source: "s", Session: "a"})
	sizes := []int{0, 1, 10, 900, 1024, 31 << 10, 40 << 10, 1024, 0, 3000, 64 << 10, 5}
	seq := uint64(1)
	for round := range 40 {
		var ps [][]byte
		for i := range sizes {
			n := sizes[(i+round)%len(sizes)] // each round starts at another size
			ps = append(ps, bytes.Repeat([]byte{byte(round*len(sizes) + i)}, n))
		}
		for i := range 70 { // runs of 1 KiB payloads, cut when the run is full
			ps = append(ps, bytes.Repeat([]byte{byte(round + i)}, 1024))
		}
		cmds = append(cmds, Publish{Source: "s", FirstSeq: seq, Payloads: ps})
		seq += uint64(len(ps))
		if round%10 == 9 {
			seq += 7 // a gap: seven numbers never published
		}
	}
	src := openApplied(t, cmds...)
	want := mustDigest(t, src)
	stream := snapshotBytes(t, src)
	if len(stream) < 20*restoreBatchBytes {
		t.Fatalf("stream of %d bytes: too short to span many transactions", len(stream))
	}
	dst := openTest(t)
	if err := dst.Restore(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if got := mustDigest(t, dst); got != want {
		t.Fatal("the restored repository differs from the one the stream came from")
	}
	// A stream cut short in the middle of the messages is refused.
	if err := openTest(t).Restore(bytes.NewReader(stream[:len(stream)/2])); err == nil {
		t.Fatal("a stream cut in half was restored")
	}
}
