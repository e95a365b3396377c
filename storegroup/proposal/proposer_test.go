package proposal

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/repository"
)

// Only this process's own proposals are answered from a batch's results:
// an entry proposed by another store (or an earlier process of this one)
// carries a token with another prefix, and must never answer a waiting
// proposal with someone else's result.
func TestDecidedAnswersOnlyOwnProposals(t *testing.T) {
	mine, other := newProposals(), newProposals()
	_, token, p := mine.register()
	_, otherToken, _ := other.register() // same counter, 1, other prefix
	tests := []struct {
		name string
		ext  []byte
	}{
		{"no extensions", nil},
		{"another process's token", otherToken},
		{"a truncated token", token[:tokenSize-1]},
		{"a longer value", append(append([]byte{}, token...), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mine.decided([]*raft.Log{{Index: 7, Extensions: tt.ext}}, []repository.Result{{Index: 7}})
			select {
			case <-p.done:
				t.Fatalf("proposal answered by an entry with extensions %x", tt.ext)
			default:
			}
		})
	}
	res := []repository.Result{{Index: 8}, {Index: 9}}
	mine.decided([]*raft.Log{{Index: 8, Extensions: otherToken}, {Index: 9, Extensions: token}}, res)
	if p.Response() != &res[1] || p.Index() != 9 || p.Error() != nil {
		t.Fatalf("own proposal answered with %v at %d (%v), want the result of entry 9", p.Response(), p.Index(), p.Error())
	}
	if mine.early.Load() != 1 || len(mine.waiting) != 0 {
		t.Fatalf("early answers %d, pending %d; want 1 and 0", mine.early.Load(), len(mine.waiting))
	}
}

// The first answer wins: raft's future, resolving after an early answer,
// changes nothing, and an early answer after raft's error changes nothing.
func TestFirstAnswerWins(t *testing.T) {
	ps := newProposals()
	n, token, early := ps.register()
	res := []repository.Result{{Index: 3}}
	ps.decided([]*raft.Log{{Index: 3, Extensions: token}}, res)
	if ps.finish(n, 3, errors.New("late"), nil) != nil {
		t.Fatal("raft's answer replaced an early one")
	}
	if early.Response() != &res[0] {
		t.Fatalf("response %v, want the decided result", early.Response())
	}

	n, token, failed := ps.register()
	if ps.finish(n, 0, nil, raft.ErrLeadershipLost) == nil {
		t.Fatal("raft's error did not answer a waiting proposal")
	}
	ps.decided([]*raft.Log{{Index: 4, Extensions: token}}, []repository.Result{{Index: 4}})
	if !errors.Is(failed.Error(), raft.ErrLeadershipLost) || failed.Response() != nil {
		t.Fatalf("answer %v / %v, want raft's error", failed.Error(), failed.Response())
	}
	if ps.early.Load() != 1 {
		t.Fatalf("early answers %d, want 1", ps.early.Load())
	}
}

// Before raft runs, a proposal is refused as if this store did not lead,
// and nothing waits for an early answer that can never come.
func TestProposeBeforeRaftRuns(t *testing.T) {
	p := New(func() *raft.Raft { return nil }, time.Second, nil)
	for name, f := range map[string]raft.ApplyFuture{"Propose": p.Propose(nil), "ProposeDecided": p.ProposeDecided(nil)} {
		if err := f.Error(); !errors.Is(err, raft.ErrNotLeader) {
			t.Errorf("%s before raft runs: %v, want raft.ErrNotLeader", name, err)
		}
	}
	if len(p.pending.waiting) != 0 {
		t.Fatalf("%d proposals wait for an answer", len(p.pending.waiting))
	}
}
