package publisher

import (
	"fmt"

	"umstore/wire"
)

// With a state file, no message leaves the publisher before the file says
// that its sequence number may have been sent (stateFile.SentUpTo). A
// restarted publisher that cannot reach every group then resumes past that
// bound instead of past the highest number the groups that answered hold:
// a message an earlier incarnation sent, which a silent group committed but
// whose acknowledgement never came back, is not given a second payload
// (chaos seed 1209, schedule 110). The bound is written ahead of need, a
// reservation of sentReserve numbers at a time, and extended in the
// background once half of it is used, so that Send waits for the file only
// when it outruns the disk. The price: a publisher restarted while a group
// is unreachable skips the numbers reserved but never sent, at most
// sentReserve; once every group has said what it holds of them it declares
// the rest never published to the groups (unused.go),
// so receivers do not report those no group holds as lost.

// sentReserve is how many sequence numbers one write of the state file
// reserves ahead of Send.
const sentReserve = 4096

// reservedLocked reports whether seq may be sent now, starting an
// extension of the reservation when it runs low. Caller holds p.mu.
func (p *Publisher) reservedLocked(seq uint64) bool {
	if p.state == nil {
		return true
	}
	if !p.reserving && p.state.SentUpTo < wire.MaxSeq && seq+sentReserve/2 > p.state.SentUpTo {
		p.reserving = true
		p.wg.Add(1)
		go p.reserve(seq)
	}
	return seq <= p.reserved
}

// reserve writes a state file whose bound covers seq and sentReserve
// numbers beyond it; p.reserved follows once the file is on disk.
func (p *Publisher) reserve(seq uint64) {
	defer p.wg.Done()
	p.stateWrite.Lock()
	defer p.stateWrite.Unlock()
	p.mu.Lock()
	target := min(seq+sentReserve, uint64(wire.MaxSeq))
	p.state.SentUpTo = max(p.state.SentUpTo, target)
	st := p.state.copy()
	p.mu.Unlock()
	err := st.write(p.cfg.StateFile)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserving = false
	if err != nil {
		p.reserveErr = fmt.Errorf("%w (the state file must record a sequence number before it is sent)", err)
	} else {
		p.reserved = max(p.reserved, st.SentUpTo)
	}
	p.broadcastLocked()
}
