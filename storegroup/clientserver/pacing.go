package clientserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"umstore/repository"
	"umstore/wire"
)

// Receiver-paced persistence (RPP) on the leader. A paced source's messages
// are released by the store's retention once every active paced receiver consumed
// them (pacedThrough), and, in blocking mode, never before while one is
// active, even at the retention limit. What keeps the repository within
// its limit then is the publisher: the leader holds its Publish frames
// back (pace) while the source is at its limit with messages a paced
// receiver has not consumed, as UM's store withholds stability
// acknowledgements. The publisher's flight size then blocks its Send.
//
// The hold is the connection's own: the frame waits before it is
// proposed, the connection's reader with it, so TCP slows the publisher
// down. Every second the leader tells the publisher why (HeldBack), which
// also keeps the publisher from taking the silence for a frozen leader,
// and counts the publisher as active. The limit can be passed by what was
// in flight when it was reached (a connection's window of proposals).

// Pacer remembers each source's pacing mode for the Publish path, where
// reading the repository per frame would cost every source, paced or not.
type Pacer struct {
	repo                  *repository.Repo
	commit                func() error                              // commits what the repository applied (its pending batches) before a count is read
	releaseConsumed       func(source string, consumed uint64) bool // retention's release of what every paced receiver consumed
	log                   *slog.Logger
	maxBytes, maxMessages uint64

	mu    sync.Mutex
	modes map[string]pacingEntry
	held  atomic.Uint64 // Publish frames held back, for metrics
}

type pacingEntry struct {
	mode repository.Pacing
	at   time.Time
}

// pacingCacheAge bounds how long a cached mode is used: a registration on
// another leader changes it through the log only.
const pacingCacheAge = time.Second

// NewPacer returns the pacer of a store whose retention limits are maxBytes
// and maxMessages (0: none); releaseConsumed is retention's release of what
// every active paced receiver of a source consumed, reporting whether it
// released anything.
//
// commit makes what the repository applied visible to reads: a store may
// leave batches of publishes uncommitted for a few milliseconds
// (repository.ApplyDeferred), and a count that missed them would let the
// publisher past the limit by as many.
func NewPacer(repo *repository.Repo, commit func() error, releaseConsumed func(source string, consumed uint64) bool, log *slog.Logger, maxBytes, maxMessages uint64) *Pacer {
	return &Pacer{repo: repo, commit: commit, releaseConsumed: releaseConsumed, log: log, maxBytes: maxBytes, maxMessages: maxMessages, modes: map[string]pacingEntry{}}
}

// Held counts the publishers held back, each once per hold, for
// umstore_publishers_held_back_total.
func (p *Pacer) Held() uint64 { return p.held.Load() }

// mode returns the source's pacing mode, from the cache if fresh.
func (p *Pacer) mode(source string, now time.Time) repository.Pacing {
	p.mu.Lock()
	e, ok := p.modes[source]
	p.mu.Unlock()
	if ok && now.Sub(e.at) < pacingCacheAge {
		return e.mode
	}
	mode := repository.PacingNone
	if st, err := p.repo.Pacing(source); err == nil {
		mode = st.Mode
	}
	p.set(source, mode)
	return mode
}

// set records a mode just registered.
func (p *Pacer) set(source string, mode repository.Pacing) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.modes[source] = pacingEntry{mode: mode, at: time.Now()}
	p.mu.Unlock()
}

// full reports whether source is at its retention limit with messages an
// active paced receiver has not consumed, once what they all consumed is
// released; why says so for the publisher.
func (p *Pacer) full(source string) (bool, string) {
	over := func() bool {
		if p.commit != nil && p.commit() != nil {
			return false // the store is stopping
		}
		info, ok, err := p.repo.Source(source)
		return err == nil && ok && ((p.maxBytes > 0 && info.Bytes >= p.maxBytes) || (p.maxMessages > 0 && info.Count >= p.maxMessages))
	}
	if !over() {
		return false, ""
	}
	st, err := p.repo.Pacing(source)
	if err != nil || st.Mode != repository.PacingBlocking || st.Holders == 0 {
		return false, "" // retention releases the oldest as usual
	}
	if p.releaseConsumed(source, st.ConsumedThrough) && !over() {
		return false, ""
	}
	return true, fmt.Sprintf("source %q is at its retention limit with messages its %d active paced receiver(s) have not consumed (the slowest is at %d): blocking receiver-paced persistence holds the publisher back until they consume, or expire after the receiver activity timeout",
		source, st.Holders, st.ConsumedThrough)
}

// paceNotice is how often a held-back publisher is told why.
const paceNotice = time.Second

// pace holds a Publish of source back while the source is full (see
// pacer.full): it returns true to go on (the caller checks leadership
// again), false if ctx ended first. A batch that only sends again what the
// group holds is never held back: it adds nothing to retention, and while
// it waited the paced receivers could consume those messages and retention
// release them, after which the group could only answer them as lost
// (a publisher whose Acks were lost with its connection sends them again).
func (cs *Server) pace(ctx context.Context, source, session string, batch []*wire.Publish, replies *replyQueue) bool {
	p := cs.Pacer
	if p == nil || (p.maxBytes == 0 && p.maxMessages == 0) || p.mode(source, time.Now()) != repository.PacingBlocking {
		return true
	}
	var noticed time.Time
	for {
		full, why := p.full(source)
		if !full || !cs.IsLeader() {
			return true
		}
		if info, ok, err := cs.Repo.Source(source); err == nil && ok && onlyHeld(info, batch) {
			return true // read only while full: not on every Publish of a paced source
		}
		if now := time.Now(); now.Sub(noticed) >= paceNotice {
			if noticed.IsZero() {
				p.held.Add(1)
				p.log.Info("holding a publisher back: receiver-paced persistence", "source", source, "why", why)
			}
			noticed = now
			cs.TouchSource(source, session, now)
			replies.put(reply{msg: &wire.HeldBack{Source: source, Reason: why}})
		}
		select {
		case <-ctx.Done():
			return false
		case <-cs.NextApplied():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// onlyHeld reports whether every message of the batch's frames is one the
// group holds, or one retention released (never stored again): nothing in
// it is new to the group.
func onlyHeld(info repository.SourceInfo, batch []*wire.Publish) bool {
	for _, f := range batch {
		if f.Source != info.Name || len(f.Payloads) == 0 {
			continue
		}
		first, last := f.FirstSeq, f.FirstSeq+uint64(len(f.Payloads))-1
		if last > info.HighSeq || last < first {
			return false
		}
		from := max(first, info.TrimmedThrough+1)
		for _, g := range info.Gaps {
			if g.From <= last && g.To >= from {
				return false // a number the group never received
			}
		}
	}
	return true
}
