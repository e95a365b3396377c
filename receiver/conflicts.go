package receiver

import "time"

// Two groups may hold different payloads for one sequence number (two
// publishers given disjoint store lists, a reused number): the stores
// count and show it (a consistency violation) but change neither copy.
// The receiver resolves it by one rule, so that what it delivers does not
// depend on which group it happened to read: the payload of the lowest
// group index (among the groups it reaches) that holds the number. Read
// asks the groups in index order and fills the holes of the first from
// the next ones, keeping the first payload found; Follow delivers a
// number streamed by a group only once every lower-index group it is
// connected to has streamed past it (follow.go). A group found
// unreachable is asked after the others for downFor, so a down group does
// not cost every chunk a dial.

// downFor is how long a group a read found unreachable is asked last.
const downFor = 2 * time.Second

// readOrder returns the groups' indices in index order, those found
// unreachable within downFor moved to the end.
func (r *Receiver) readOrder() []int {
	var up, down []int
	for i := range r.groups {
		if r.down(i) {
			down = append(down, i)
			continue
		}
		up = append(up, i)
	}
	return append(up, down...)
}

// down reports whether a read found group i unreachable within downFor.
func (r *Receiver) down(i int) bool {
	r.failedMu.Lock()
	defer r.failedMu.Unlock()
	return !r.failedAt[i].IsZero() && time.Since(r.failedAt[i]) < downFor
}

// failed records that group i could not be read; reached that it could.
func (r *Receiver) failed(i int) { r.setFailed(i, time.Now()) }

func (r *Receiver) reached(i int) { r.setFailed(i, time.Time{}) }

func (r *Receiver) setFailed(i int, at time.Time) {
	r.failedMu.Lock()
	r.failedAt[i] = at
	r.failedMu.Unlock()
}

// lowerGroupWait bounds how long Follow holds a message back for a
// lower-index group that is connected but has not streamed past it yet:
// a lagging group delays delivery by at most this, never stops it.
const lowerGroupWait = time.Second

// pendingMsg is a message Follow received and has not delivered, with the
// group it came from.
type pendingMsg struct {
	payload []byte
	group   int // index into Receiver.groups
	since   time.Time
}

// lowerMayHold reports whether a group of lower index than p's, connected
// and not yet streamed past m.next, may still bring its own payload for
// it, within lowerGroupWait of p's arrival.
func (m *merger) lowerMayHold(p pendingMsg) bool {
	if time.Since(p.since) >= lowerGroupWait {
		return false
	}
	for h := 0; h < p.group; h++ {
		if m.connected[h] && m.through[h] < m.next {
			return true
		}
	}
	return false
}
