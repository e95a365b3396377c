package connmux

import (
	"context"
	"fmt"
	"sync"

	"umstore/wire"
)

// Pool is a process's shared connections to stores: one per store
// address and dialer settings, open while a lane uses it. Its methods are
// safe for concurrent use. The zero Pool is not usable; call NewPool.
type Pool struct {
	mu    sync.Mutex
	links map[string]*link
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{links: map[string]*link{}} }

// Dial returns a new lane to the store at addr, over the pool's connection
// to it, opening that connection (with d) if there is none. Callers that
// dial the same store at once share one dial. The store's Welcome is the
// one it gave the shared connection.
func (p *Pool) Dial(ctx context.Context, d *wire.Dialer, addr string) (*Lane, *wire.Welcome, error) {
	key := dialerKey(d) + "\x00" + addr
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		lk := p.waitOn(key, d, addr)
		select {
		case <-lk.ready:
		case <-ctx.Done():
			lk.giveUp()
			return nil, nil, ctx.Err()
		}
		if lk.dialErr != nil {
			lk.giveUp()
			return nil, nil, lk.dialErr
		}
		if lane := lk.add(); lane != nil {
			return lane, lk.welcome, nil
		}
		// The connection failed or filled up between its dial and now:
		// the next round opens another.
	}
}

// waitOn returns the usable connection for key, counting the caller as
// waiting for it; it starts a new one (and its dial) when there is none.
func (p *Pool) waitOn(key string, d *wire.Dialer, addr string) *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lk := p.links[key]; lk != nil && lk.wait() {
		return lk
	}
	lk := newLink(p, key, addr)
	lk.waiters = 1
	p.links[key] = lk
	go lk.dial(d)
	return lk
}

// forget removes lk from the pool, if it is still the connection for its
// key: the next Dial opens another.
func (p *Pool) forget(lk *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links[lk.key] == lk {
		delete(p.links, lk.key)
	}
}

// open reports how many shared connections the pool holds (tests).
func (p *Pool) open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// dialerKey is what makes two dialers' connections interchangeable: the
// same client name, token, TLS settings, source address, frame bound and
// time-out. A dialer with its own dial function (tests that cut links)
// shares only with itself: two closures of one function may dial
// differently.
func dialerKey(d *wire.Dialer) string {
	own := ""
	if d.DialContext != nil {
		own = fmt.Sprintf("%p", d)
	}
	return fmt.Sprintf("%q|%q|%p|%s|%d|%d|%s", d.Client, d.Token, d.TLS, d.LocalIP, d.MaxFrame, d.Timeout, own)
}
