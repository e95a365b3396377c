package storegroup

import (
	"context"
	"sync"
)

// Admission decides when an empty store may join its group and start
// catching up. A host daemon shares one Admission among its stores so that
// at most one empty store per group catches up at a time (SPEC §4 rule 4):
// the next starts only once the previous has caught up.
type Admission interface {
	// Acquire blocks until store (of group) may start catching up, or ctx
	// ends. The store calls release once it has caught up.
	Acquire(ctx context.Context, group int, store string) (release func(), err error)
}

// holderReporter is implemented by admissions that can say who holds a
// group's turn, for the logs.
type holderReporter interface {
	CatchingUp() map[int]string
}

// HostAdmission admits one empty store per group at a time, in the order
// they ask. The zero value is not usable: use NewHostAdmission.
type HostAdmission struct {
	mu    sync.Mutex
	slots map[int]chan struct{}
	now   map[int]string // group -> store catching up
	turns uint64         // turns given so far, for Turns
}

// NewHostAdmission returns an Admission for the stores of one host.
func NewHostAdmission() *HostAdmission {
	return &HostAdmission{slots: map[int]chan struct{}{}, now: map[int]string{}}
}

func (h *HostAdmission) slot(group int) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.slots[group]
	if !ok {
		ch = make(chan struct{}, 1)
		h.slots[group] = ch
	}
	return ch
}

// Acquire implements Admission.
func (h *HostAdmission) Acquire(ctx context.Context, group int, store string) (func(), error) {
	ch := h.slot(group)
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	h.now[group] = store
	h.turns++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.now, group)
			h.mu.Unlock()
			<-ch
		})
	}, nil
}

// CatchingUp returns, per group, the store currently admitted and catching up.
func (h *HostAdmission) CatchingUp() map[int]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int]string, len(h.now))
	for g, s := range h.now {
		out[g] = s
	}
	return out
}

// Turns counts the turns given so far. A store closes its vote gate only
// after its turn is given and opens it before giving the turn back, so a
// reader of several stores' statuses that sees the count unchanged across
// its reads saw at most one store per group catching up, as it was; a
// changed count means a turn was handed on between two reads (see
// storehost's Statuses).
func (h *HostAdmission) Turns() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.turns
}

// unlimited admits every store at once (a store used alone, in tests).
type unlimited struct{}

func (unlimited) Acquire(context.Context, int, string) (func(), error) { return func() {}, nil }
