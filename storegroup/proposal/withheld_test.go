package proposal

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// An advisory command the gate refuses waits, bounded, and is proposed
// once the gate lets it through; one the gate allows goes to raft at
// once; a refused Propose reaches raft never.
func TestAdviseWithholdsUntilTheGateOpens(t *testing.T) {
	open := false
	errClosed := errors.New("level not active")
	proposed := 0
	p := New(func() *raft.Raft { proposed++; return nil }, 0, nil)
	p.Gate = func(cmd []byte) error {
		if !open && cmd[0] == 17 {
			return errClosed
		}
		return nil
	}
	if err := p.Propose([]byte{17}).Error(); !errors.Is(err, errClosed) || proposed != 0 {
		t.Fatalf("gated Propose: %v (raft asked %d times), want the gate's error before raft", err, proposed)
	}
	for i := 0; i < maxWithheld+10; i++ {
		p.Advise([]byte{17, byte(i)})
	}
	p.Advise([]byte{3}) // not gated: proposed now
	if got := p.Withheld(); got != maxWithheld || proposed != 1 {
		t.Fatalf("withheld %d (want %d), raft asked %d times (want 1)", got, maxWithheld, proposed)
	}
	if first := p.withheld[0][1]; first != 10 {
		t.Errorf("oldest kept is #%d, want #10: the oldest are dropped", first)
	}
	p.ProposeWithheld()
	if p.Withheld() != maxWithheld || proposed != 1 {
		t.Fatalf("with the gate closed ProposeWithheld proposed: %d withheld, raft asked %d times", p.Withheld(), proposed)
	}
	open = true
	p.ProposeWithheld()
	if p.Withheld() != 0 || proposed != 1+maxWithheld {
		t.Fatalf("with the gate open: %d still withheld, raft asked %d times, want 0 and %d", p.Withheld(), proposed, 1+maxWithheld)
	}
}
