package publisher

import (
	"context"
	"sync"

	"umstore/internal/connmux"
)

// Connections are the connections to the stores that the publishers of
// one process share, as an Ultra Messaging context's sources share its
// transport: a store is reached over one connection for every publisher
// given the same Connections (and the same token and TLS settings),
// rather than over one connection per publisher. A thousand sources then
// cost a store one connection with its reader and writer instead of a
// thousand, and their frames share TCP writes both ways.
//
// Each publisher still registers its own source and session, resumes,
// streams and is acknowledged on its own. A store found silent, or no
// longer leading, is given up for all of them at once.
type Connections struct {
	pool *connmux.Pool
	// sweeper checks the silence of every stream on these connections
	// from one goroutine (sweep.go).
	sweeper sweeper
	// learner asks where the groups' members listen for all of them
	// (learner.go).
	learner learner
	// registering bounds, per group, the registrations in flight from the
	// publishers given these connections (maxRegistering): ten thousand
	// publishers starting at once queue here, each timed from when its
	// Register leaves, rather than at the stores, where every Register is
	// a raft entry and one that outwaits registerTimeout is sent again.
	// Per group, so that a slow group's registrations do not hold up the
	// others' (one bound for all let 20,000 sources register with group 2
	// and reach group 1 only after RegisterTimeout).
	mu          sync.Mutex
	registering map[int]chan struct{}
}

// maxRegistering is how many registrations the publishers sharing
// Connections have in flight at once to one group.
const maxRegistering = 256

// NewConnections returns a set of shared connections, empty until a
// publisher uses it. It holds a connection only while a publisher uses
// it: nothing to close.
func NewConnections() *Connections {
	return &Connections{pool: connmux.NewPool(), registering: map[int]chan struct{}{}}
}

// startRegistering waits for a registration slot of group (its 0-based
// index in the publishers' store lists); the func it returns gives it
// back. Without Connections there is nothing to wait for.
func (c *Connections) startRegistering(ctx context.Context, group int) (done func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	c.mu.Lock()
	slots := c.registering[group]
	if slots == nil {
		slots = make(chan struct{}, maxRegistering)
		c.registering[group] = slots
	}
	c.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// abandoner is a shared connection's lane (connmux.Lane): the store it
// goes to can be given up for every publisher at once.
type abandoner interface{ Abandon() }
