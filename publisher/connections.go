package publisher

import (
	"context"

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
	// registering bounds the registrations in flight from the
	// publishers given these connections (maxRegistering): ten thousand
	// publishers starting at once queue here, each timed from when its
	// Register leaves, rather than at the stores, where every Register is
	// a raft entry and one that outwaits registerTimeout is sent again.
	registering chan struct{}
}

// maxRegistering is how many registrations the publishers sharing
// Connections have in flight at once.
const maxRegistering = 256

// NewConnections returns a set of shared connections, empty until a
// publisher uses it. It holds a connection only while a publisher uses
// it: nothing to close.
func NewConnections() *Connections {
	return &Connections{pool: connmux.NewPool(), registering: make(chan struct{}, maxRegistering)}
}

// startRegistering waits for a registration slot; the func it returns
// gives it back. Without Connections there is nothing to wait for.
func (c *Connections) startRegistering(ctx context.Context) (done func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	select {
	case c.registering <- struct{}{}:
		return func() { <-c.registering }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// abandoner is a shared connection's lane (connmux.Lane): the store it
// goes to can be given up for every publisher at once.
type abandoner interface{ Abandon() }
