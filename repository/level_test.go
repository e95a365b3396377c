package repository

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A group's active level only rises: each ActiveLevel above the recorded
// one raises it, one at or below changes nothing, a level of 0 is refused
// as a domain error, and a level above this binary's stops the batch (the
// store would otherwise run a group whose formats it does not read).
func TestApplyActiveLevel(t *testing.T) {
	base := []any{InitGroup{GroupID: "g", Index: 1, UnixNano: 1}}
	tests := []struct {
		name    string
		cmds    []any
		want    int
		refused bool // the last entry's Result.Err is set
	}{
		{"never raised", nil, 1, false},
		{"raised to 2", []any{ActiveLevel{Level: 2}}, 2, false},
		{"raised twice to the same level", []any{ActiveLevel{Level: 2}, ActiveLevel{Level: 2}}, 2, false},
		{"never lowered", []any{ActiveLevel{Level: 2}, ActiveLevel{Level: 1}}, 2, false},
		{"level 1 on a fresh group changes nothing", []any{ActiveLevel{Level: 1}}, 1, false},
		{"level 0 refused", []any{ActiveLevel{Level: 0}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, append(append([]any{}, base...), tt.cmds...)...))
			if got := res[len(res)-1].Err != nil; got != tt.refused {
				t.Errorf("last entry refused = %v (%v), want %v", got, res[len(res)-1].Err, tt.refused)
			}
			got, err := r.ActiveLevel()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ActiveLevel() = %d, want %d", got, tt.want)
			}
			r = reopen(t, r)
			if again, _ := r.ActiveLevel(); again != tt.want {
				t.Errorf("after reopen ActiveLevel() = %d, want %d", again, tt.want)
			}
		})
	}
}

func TestActiveLevelAboveThisBinaryStops(t *testing.T) {
	r := openApplied(t, InitGroup{GroupID: "g", Index: 1, UnixNano: 1})
	_, err := r.Apply(logOf(2, ActiveLevel{Level: FormatLevel + 1}))
	if !errors.Is(err, ErrUnknownCommand) || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("Apply of a level above this binary's: %v, want ErrUnknownCommand saying to upgrade", err)
	}
	if got, _ := r.ActiveLevel(); got != 1 {
		t.Errorf("level %d after the refused batch, want 1", got)
	}
}

// The level travels in the snapshot stream only once raised: a group at
// level 1 sends a stream with no record a level-1 binary does not know.
func TestActiveLevelInSnapshotAndDigest(t *testing.T) {
	base := []any{InitGroup{GroupID: "g", Index: 1, UnixNano: 1}, Register{Source: "a", UnixNano: 2}}
	low := openApplied(t, base...)
	high := openApplied(t, append(base, ActiveLevel{Level: 2})...)
	if mustDigest(t, low) == mustDigest(t, high) {
		t.Error("the active level does not change the digest")
	}
	lowStream, highStream := snapshotBytes(t, low), snapshotBytes(t, high)
	if len(highStream) != len(lowStream)+1+1+8 {
		t.Errorf("stream of level 2 is %d bytes, of level 1 %d: want one 'l' record (10 bytes) more", len(highStream), len(lowStream))
	}
	if bytes.Contains(lowStream, []byte{'l', 8}) {
		t.Error("the stream of a group at level 1 carries a level record")
	}
	for name, r := range restoredCopies(t, high, base...) {
		if got, _ := r.ActiveLevel(); got != 2 {
			t.Errorf("%s: restored level %d, want 2", name, got)
		}
	}
	for name, r := range restoredCopies(t, low, append(base, ActiveLevel{Level: 2})...) {
		if got, _ := r.ActiveLevel(); got != 1 {
			t.Errorf("%s: restored a level-1 snapshot, level %d, want 1", name, got)
		}
	}
}

// Gate lets through what the group's level includes and refuses the rest
// with ErrLevelNotActive, asking for the level only when it matters.
func TestGate(t *testing.T) {
	pk := encodePublishKeyed(Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("x")}}, "", false)
	tests := []struct {
		name  string
		cmd   []byte
		level int
		ok    bool
		asked bool
	}{
		{"Publish at level 1", encode(pub("a", 1, 1)), 1, true, false},
		{"MemberAddress at level 1", EncodeMemberAddress(MemberAddress{Name: "n", RaftAddr: "r", ClientAddr: "c"}), 1, true, false},
		{"PublishKeyed at level 1", pk, 1, false, true},
		{"PublishKeyed at level 2", pk, 2, true, true},
		{"Unpublished at level 1", EncodeUnpublished(Unpublished{Source: "a", From: 1, To: 2}), 1, false, true},
		{"Unpublished at level 2", EncodeUnpublished(Unpublished{Source: "a", From: 1, To: 2}), 2, true, true},
		{"ActiveLevel at level 1", EncodeActiveLevel(ActiveLevel{Level: 2}), 1, true, false},
		{"ForgetSource at level 1", EncodeForgetSource(ForgetSource{Source: "a", Session: "s"}), 1, false, true},
		{"ForgetSource at level 2", EncodeForgetSource(ForgetSource{Source: "a", Session: "s"}), 2, true, true},
		{"empty", nil, 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := false
			err := Gate(tt.cmd, func() int { asked = true; return tt.level })
			if (err == nil) != tt.ok {
				t.Fatalf("Gate: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrLevelNotActive) {
				t.Errorf("Gate: %v, want ErrLevelNotActive", err)
			}
			if asked != tt.asked {
				t.Errorf("level asked = %v, want %v", asked, tt.asked)
			}
		})
	}
}

// Every command type this binary knows belongs to a level of the table,
// and the table's newest level is FormatLevel.
func TestEveryCommandTypeHasALevel(t *testing.T) {
	ls := Levels()
	if ls[len(ls)-1].Level != FormatLevel {
		t.Fatalf("newest level of the table %d, FormatLevel %d", ls[len(ls)-1].Level, FormatLevel)
	}
	for _, typ := range KnownCommands() {
		if l := IntroducedAt(typ); l < 1 || l > FormatLevel {
			t.Errorf("%v: level %d", typ, l)
		}
		if typ > CmdMemberAddress && IntroducedAt(typ) == 1 {
			t.Errorf("%v is newer than v0.1.0 (types 1-15) but is of level 1: give it a level in introducedAt", typ)
		}
	}
}
