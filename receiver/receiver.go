package receiver

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"umstore/internal/groupclient"
	"umstore/wire"
)

// Message is one message of the source.
type Message struct {
	Seq     uint64
	Payload []byte
}

// Range is an inclusive range of sequence numbers.
type Range struct{ From, To uint64 }

func (r Range) String() string {
	if r.From == r.To {
		return fmt.Sprint(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// MissingError names the ranges no reachable group holds and no group's
// retention released (Ranges), and, of a read from an explicit number,
// the ranges asked for that retention released (Released, see
// ReleasedError).
type MissingError struct{ Ranges, Released []Range }

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("%v: %s", ErrMissing, rangesString(e.Ranges))
	if len(e.Released) > 0 {
		msg += "; released by retention: " + rangesString(e.Released)
	}
	return msg
}

func (e *MissingError) Unwrap() error { return ErrMissing }

// Receiver reads one source. Read, Follow and Register are one at a time
// (a Receiver is not safe for concurrent reads); Ack, Consumed and Close may
// be called from any goroutine.
type Receiver struct {
	cfg         Config
	log         *slog.Logger
	dialer      *wire.Dialer
	groups      []*groupclient.Client // the groups to read, in preference order
	failedMu    sync.Mutex
	failedAt    []time.Time    // per group: when a read last found it unreachable (conflicts.go)
	damaged     damageLog      // messages served damaged, never delivered (checksum.go)
	released    releasedMark   // how far the groups said retention released the source (released.go)
	unpublished unpublishedSet // what the groups said was never published (unpublished.go)

	durable *durable // nil without a Name
}

// Resume, as the from of Read or Follow, starts a durable receiver one past
// the last message it consumed, as its groups recorded it (see Register),
// and a receiver without a name, or a name no group knows, at the oldest
// message any group retains.
const Resume uint64 = math.MaxUint64

// New validates the configuration. Connections open on first use; a
// durable receiver (Config.Name) registers on its first Read or Follow, or
// when Register is called.
func New(cfg Config) (*Receiver, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Receiver{cfg: cfg, log: cfg.Logger.With("source", cfg.Source)}
	r.dialer = &wire.Dialer{Client: "receiver " + cfg.Source, LocalIP: cfg.LocalIP, Timeout: 2 * time.Second, TLS: cfg.TLS, Token: cfg.Token}
	for i, addrs := range cfg.Groups {
		if cfg.Group != 0 && cfg.Group != i+1 {
			continue
		}
		r.groups = append(r.groups, groupclient.New(i+1, addrs, r.dialer))
	}
	r.failedAt = make([]time.Time, len(r.groups))
	if cfg.Name != "" {
		r.durable = newDurable(r)
	}
	return r, nil
}

// Close records what a durable receiver consumed (waiting a bounded time
// for its groups), tells them it is leaving, so its name is free at once,
// and closes the receiver's connections. Call it once reading ended.
func (r *Receiver) Close() error {
	if r.durable != nil {
		r.durable.close()
	}
	for _, g := range r.groups {
		g.Close()
	}
	return nil
}

// start turns from into a sequence number: Resume becomes one past the
// durable receiver's position, registering first if needed (see Consumed),
// or the oldest retained message. A durable receiver given an explicit from registers
// too, so what it consumes is recorded.
func (r *Receiver) start(ctx context.Context, from uint64) (uint64, error) {
	if from == Oldest {
		from = Resume
	}
	if r.durable != nil {
		if _, err := r.durable.ensure(ctx); err != nil {
			return 0, err
		}
		// After the position the groups recorded, or, once this instance
		// acknowledged more, after that.
		if pos := r.durable.position(); from == Resume && pos > 0 {
			return pos + 1, nil
		}
	}
	if from != Resume {
		return max(from, 1), nil
	}
	low, err := r.Oldest(ctx)
	if err != nil {
		return 0, err
	}
	return max(low, 1), nil
}

// consumed is called once fn returned a message (or a skipped range) to
// the application: the position of a durable receiver that acknowledges
// automatically moves there.
func (r *Receiver) consumed(seq uint64) {
	if r.durable != nil && !r.cfg.ExplicitAck {
		r.durable.ack(seq)
	}
}

// High returns the highest sequence number any reachable group holds (0 if
// none holds the source).
func (r *Receiver) High(ctx context.Context) (uint64, error) {
	var high uint64
	err := r.eachGroupMeta(ctx, func(rep *wire.FetchReply) { high = max(high, rep.HighSeq) })
	return high, err
}

// Oldest returns the oldest sequence number any reachable group still
// holds (0 if none holds the source): where a late-joining receiver that
// wants everything retained starts.
func (r *Receiver) Oldest(ctx context.Context) (uint64, error) {
	var low uint64
	err := r.eachGroupMeta(ctx, func(rep *wire.FetchReply) {
		if rep.LowSeq > 0 && (low == 0 || rep.LowSeq < low) {
			low = rep.LowSeq
		}
	})
	return low, err
}

// Read calls fn for every message in [from, to], in order, each once. When
// some sequence numbers are held by no reachable group it still delivers
// everything else and then returns a *MissingError naming them, or, when
// retention released all of them, a *ReleasedError. It stops early if fn
// returns an error.
//
// from may be Resume, or Oldest (released numbers are then skipped and
// not reported). Numbers their publisher declared never published are
// neither delivered nor reported. A durable receiver acknowledges each message once fn
// returned it without an error (unless Config.ExplicitAck), and Close
// records the last.
func (r *Receiver) Read(ctx context.Context, from, to uint64, fn func(Message) error) error {
	retainedOnly := from == Oldest
	from, err := r.start(ctx, from)
	if err != nil {
		return err
	}
	if r.durable != nil {
		inner := fn
		fn = func(m Message) error {
			r.durable.hand(m.Seq)
			if err := inner(m); err != nil {
				return err
			}
			r.consumed(m.Seq)
			return nil
		}
	}
	var missing []Range
	next := from
	for next <= to {
		if err := ctx.Err(); err != nil {
			return err
		}
		through, gaps, err := r.readChunk(ctx, next, to, fn)
		if err != nil {
			return err
		}
		missing = appendRanges(missing, gaps)
		if through == math.MaxUint64 {
			break
		}
		next = through + 1
	}
	r.passedOver(missing)
	gone, missing := splitReleased(r.unpublished.without(missing), r.released.get())
	if len(gone) > 0 {
		r.log.Info("skipped what retention released", "ranges", rangesString(gone))
	}
	if retainedOnly {
		gone = nil
	}
	switch {
	case len(missing) > 0:
		return &MissingError{Ranges: missing, Released: gone}
	case len(gone) > 0:
		return &ReleasedError{Ranges: gone}
	}
	return nil
}

// readChunk reads one fetch's worth starting at from, fills holes from the
// other groups, delivers in order, and returns how far it got and the
// ranges no group holds. It keeps the messages it read, never a slot per
// sequence number: [from, to] may span billions of sequence numbers of
// which a source holds a handful.
func (r *Receiver) readChunk(ctx context.Context, from, to uint64, fn func(Message) error) (uint64, []Range, error) {
	var lastErr error
	for _, gi := range r.readOrder() {
		rep, err := r.fetch(ctx, r.groups[gi], &wire.Fetch{Source: r.cfg.Source, From: from, To: to, MaxCount: r.cfg.FetchCount, MaxBytes: r.cfg.FetchBytes})
		if err != nil {
			r.failed(gi)
			lastErr = err
			continue
		}
		r.reached(gi)
		c := chunk{from: from, through: max(min(rep.Through, to), from)} // a store always covers at least its first message
		msgs, damaged := r.intactOnly(r.groups[gi].Group, rep.Msgs)
		c.add(msgs)
		holes := c.holes()
		// The other groups fill the holes; when a payload was damaged,
		// every group (this one too) is asked once more.
		last := len(r.groups)
		if damaged {
			last = 2 * len(r.groups)
		}
		for j := 1; j < last && len(holes) > 0; j++ {
			other := (gi + j) % len(r.groups)
			for _, h := range holes {
				if !r.fetchRange(ctx, other, h, &c) {
					break // the chunk was cut short at the end of what other sent, or other did not answer
				}
			}
			holes = c.holes()
		}
		for _, m := range c.msgs {
			if err := fn(Message{Seq: m.Seq, Payload: m.Payload}); err != nil {
				return 0, nil, err
			}
		}
		return c.through, holes, nil
	}
	return 0, nil, unreachable(lastErr)
}

// fetchRange reads h from group gi into c, until the group's reply is cut
// short by a limit: c then ends where that reply ends (the rest is the next
// chunk's), so a chunk holds at most about one fetch's worth per group, and
// fetchRange reports false. A group that does not answer is asked for
// none of the chunk's other holes (false too): each would cost the same.
func (r *Receiver) fetchRange(ctx context.Context, gi int, h Range, c *chunk) bool {
	g := r.groups[gi]
	rep, err := g.Fetch(ctx, &wire.Fetch{Source: r.cfg.Source, From: h.From, To: h.To, MaxCount: r.cfg.FetchCount, MaxBytes: r.cfg.FetchBytes})
	if err != nil {
		r.failed(gi)
		return false
	}
	r.reached(gi)
	r.released.see(rep.Released)
	r.unpublished.see(rep.Unpublished)
	msgs, _ := r.intactOnly(g.Group, rep.Msgs)
	if rep.Through >= h.From && rep.Through < h.To {
		c.cut(rep.Through)
		c.add(msgs)
		return false
	}
	c.add(msgs)
	return true
}

// chunk is what a read has of the sequence numbers [from, through]: the
// messages found, ascending and each once. A sequence number in the range
// without a message is a hole. Its size is the messages', whatever the
// range's width.
type chunk struct {
	from, through uint64
	msgs          []wire.Msg
}

// add merges msgs (from one reply) into the chunk, keeping the payload
// already held for a sequence number and dropping those outside the range.
func (c *chunk) add(msgs []wire.Msg) {
	n := len(c.msgs)
	for _, m := range msgs {
		if m.Seq >= c.from && m.Seq <= c.through {
			c.msgs = append(c.msgs, m)
		}
	}
	if len(c.msgs) == n {
		return
	}
	// Stable, so the message held first comes first and Compact keeps it.
	slices.SortStableFunc(c.msgs, func(a, b wire.Msg) int { return cmp.Compare(a.Seq, b.Seq) })
	c.msgs = slices.CompactFunc(c.msgs, func(a, b wire.Msg) bool { return a.Seq == b.Seq })
}

// cut ends the chunk at through (at least from), dropping what lies beyond.
func (c *chunk) cut(through uint64) {
	c.through = max(through, c.from)
	c.msgs = c.msgs[:sort.Search(len(c.msgs), func(i int) bool { return c.msgs[i].Seq > c.through })]
}

// holes lists the ranges of [from, through] without a message, ascending.
func (c *chunk) holes() []Range {
	var out []Range
	next := c.from
	for _, m := range c.msgs {
		if m.Seq > next {
			out = append(out, Range{From: next, To: m.Seq - 1})
		}
		if m.Seq == c.through {
			return out
		}
		next = m.Seq + 1
	}
	return append(out, Range{From: next, To: c.through})
}

// appendRanges appends b to a, merging adjacent ranges.
func appendRanges(a, b []Range) []Range {
	for _, r := range b {
		if n := len(a); n > 0 && a[n-1].To+1 == r.From {
			a[n-1].To = r.To
			continue
		}
		a = append(a, r)
	}
	return a
}
