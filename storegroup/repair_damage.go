package storegroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"umstore/internal/groupclient"
	"umstore/internal/logevery"
	"umstore/repository"
	"umstore/wire"
)

// Messages damaged at rest (see DESIGN.md, "A message damaged at rest").
//
// The repository keeps each message's CRC32C and checks it on every read:
// a message whose stored bytes no longer match is never returned, Read
// stops before it with a *repository.CorruptError. Every serve path of the
// store (Fetch, Subscribe's Deliver frames, and with them the other groups'
// repair reads, which are Fetches) reads through damageRepairer.read, which
// never serves such a payload: it counts and logs the message, treats it as
// missing in this store, and serves an intact copy in its place, found on
// another member of the group (a Fetch with Local, answered by that store
// from its own files) or, failing that, in another group. A copy is used
// only if it comes with a checksum and matches it.
//
// The copy is kept in memory, not written to this store's files: the
// damage is local, not replicated state, so nothing goes through the log
// (apply stays the same on every store), and the damaged file is left as it
// is for the operator to see. After a restart the damage is found again at
// the first read and healed again the same way.

// messageReader is how the serve paths read stored messages: the
// repository, or in tests a reader that finds chosen messages damaged.
type messageReader interface {
	Read(source string, from, to uint64, maxCount, maxBytes int) ([]repository.Message, error)
}

// Bounds of the repair of damaged messages.
const (
	// maxIntactCopies bounds the payload bytes of the intact copies a
	// store keeps in memory in place of damaged ones; past it a damaged
	// message stays missing in this store (other groups may serve it).
	maxIntactCopies = 64 << 20
	// maxDamagedTracked bounds the damaged messages a store remembers
	// while it looks for copies of them.
	maxDamagedTracked = 100_000
	// healCallTimeout bounds one request for a copy to one store or group.
	healCallTimeout = 2 * time.Second
	// healReadBudget bounds the time a read (one Fetch, one Deliver) spends
	// finding copies before it answers without the rest.
	healReadBudget = 3 * time.Second
	// healRetry is how long a damaged message without a copy waits before
	// it is looked for again, inline or by the background loop.
	healRetry = 5 * time.Second
)

// DamageStatus counts the messages this store found damaged at rest since
// it started.
type DamageStatus struct {
	Found         uint64 `json:"found"`          // messages found damaged at rest, each counted once
	Healed        uint64 `json:"healed"`         // of those, served from an intact copy of another member or group
	Pending       uint64 `json:"pending"`        // damaged messages without an intact copy yet: missing in this store
	CopiesRefused uint64 `json:"copies_refused"` // copies from other stores that failed their checksum and were not used
}

// damageDeps is what the repair of damaged messages needs (built with the
// repairer, open.go).
type damageDeps struct {
	log     *slog.Logger
	name    string
	group   int
	repo    *repository.Repo // for retention: copies of released messages are dropped
	members []Member         // every member of the group, this one included
	groups  []PeerGroup      // the other groups
	dialer  *wire.Dialer
}

type msgKey struct {
	source string
	seq    uint64
}

// damageLogInterval is how often a store repeats its warning about
// damaged messages; the warning counts the ones in between.
const damageLogInterval = 10 * time.Second

// damageRepairer finds intact copies of the messages this store holds
// damaged, and serves them in their place.
type damageRepairer struct {
	damageDeps
	reader atomic.Pointer[readerBox]

	fetchMu sync.Mutex            // one search for copies at a time: the clients are not for concurrent use
	members []*groupclient.Client // each other member alone, asked with Fetch.Local
	groups  []*groupclient.Client // the other groups, through their leaders
	wake    chan struct{}         // a damaged message waits for the background loop
	logs    logevery.Every        // one damage warning per interval
	counts  [damageCounters]atomic.Uint64

	mu        sync.Mutex
	copies    map[msgKey]repository.Message // intact copies served in place of damaged messages
	copyBytes int
	pending   map[msgKey]time.Time // damaged, no copy yet: when a copy was last looked for
}

type readerBox struct{ r messageReader }

const (
	countFound = iota
	countHealed
	countCopiesRefused
	damageCounters
)

func newDamageRepairer(d damageDeps) *damageRepairer {
	dr := &damageRepairer{
		damageDeps: d,
		wake:       make(chan struct{}, 1),
		logs:       logevery.Every{Interval: damageLogInterval},
		copies:     map[msgKey]repository.Message{},
		pending:    map[msgKey]time.Time{},
	}
	dr.reader.Store(&readerBox{r: d.repo})
	for _, m := range d.members {
		if m.Name != d.name {
			dr.members = append(dr.members, groupclient.New(d.group, []string{m.ClientAddr}, d.dialer))
		}
	}
	for _, g := range d.groups {
		var addrs []string
		for _, m := range g.Members {
			addrs = append(addrs, m.ClientAddr)
		}
		dr.groups = append(dr.groups, groupclient.New(g.Index, addrs, d.dialer))
	}
	return dr
}

// setReader replaces how the serve paths read (tests).
func (dr *damageRepairer) setReader(r messageReader) { dr.reader.Store(&readerBox{r: r}) }

// Status returns the damage counters.
func (dr *damageRepairer) Status() DamageStatus {
	dr.mu.Lock()
	pending := len(dr.pending)
	dr.mu.Unlock()
	return DamageStatus{
		Found:         dr.counts[countFound].Load(),
		Healed:        dr.counts[countHealed].Load(),
		Pending:       uint64(pending),
		CopiesRefused: dr.counts[countCopiesRefused].Load(),
	}
}

// read returns the messages of source held in [from, to] as Repo.Read does
// (same limits), with every message damaged at rest replaced by an intact
// copy or, when there is none yet, left out: absent, as a message this
// store does not hold. With heal, a damaged message without a copy is
// looked for at once (within healReadBudget), so the reader gets it in this
// answer; otherwise (a Local fetch, answered for another member) the
// background loop looks for it.
func (dr *damageRepairer) read(ctx context.Context, source string, from, to uint64, maxCount, maxBytes int, heal bool) ([]repository.Message, error) {
	r := dr.reader.Load().r
	var out []repository.Message
	total := 0
	fits := func(m repository.Message) bool {
		if maxCount > 0 && len(out) >= maxCount {
			return false
		}
		return maxBytes <= 0 || len(out) == 0 || total+len(m.Payload) <= maxBytes
	}
	healCtx, cancel := context.WithTimeout(ctx, healReadBudget)
	defer cancel()
	for next := from; ; {
		count, bytes := maxCount, maxBytes
		if maxCount > 0 {
			count = maxCount - len(out)
		}
		if maxBytes > 0 {
			bytes = maxBytes - total
		}
		if (maxCount > 0 && count <= 0) || (maxBytes > 0 && bytes <= 0) {
			return out, nil
		}
		msgs, err := r.Read(source, next, to, count, bytes)
		for _, m := range msgs {
			if !fits(m) {
				return out, nil
			}
			out = append(out, m)
			total += len(m.Payload)
		}
		var ce *repository.CorruptError
		if err == nil || !errors.As(err, &ce) {
			return out, err
		}
		if ce.Source != source || ce.Seq < next || ce.Seq > to {
			return out, fmt.Errorf("store %s: a read of %q [%d,%d] reported damage outside it: %w", dr.name, source, next, to, err)
		}
		if m, ok := dr.intact(healCtx, msgKey{source, ce.Seq}, heal && healCtx.Err() == nil); ok {
			if !fits(m) {
				return out, nil
			}
			out = append(out, m)
			total += len(m.Payload)
		}
		if ce.Seq == to {
			return out, nil
		}
		next = ce.Seq + 1
	}
}

// intact returns the intact copy of a damaged message, looking for one now
// if heal is set and it was not looked for in the last healRetry.
func (dr *damageRepairer) intact(ctx context.Context, k msgKey, heal bool) (repository.Message, bool) {
	dr.mu.Lock()
	if m, ok := dr.copies[k]; ok {
		dr.mu.Unlock()
		return m, true
	}
	tried, known := dr.pending[k]
	if !known && len(dr.pending) < maxDamagedTracked {
		dr.pending[k] = time.Time{}
	}
	dr.mu.Unlock()
	if !known {
		dr.counts[countFound].Add(1)
		if dropped, ok := dr.logs.Allow(time.Now()); ok {
			dr.log.Error("a stored message is damaged at rest (its payload fails its checksum): it is never served from this store's files; the store serves an intact copy from another member or group instead, and counts it in umstore_messages_corrupt_total",
				"source", k.source, "seq", k.seq, "damaged_found_since_last_warning", dropped)
		}
	}
	if !heal || time.Since(tried) < healRetry {
		dr.poke()
		return repository.Message{}, false
	}
	m, ok := dr.heal(ctx, k)
	if !ok {
		dr.poke()
	}
	return m, ok
}

// snapshotCopyTimeout bounds the search for one intact copy while a
// snapshot stream is being written.
const snapshotCopyTimeout = 10 * time.Second

// copyForSnapshot is the snapshot streams' repository.IntactCopy: the
// intact copy of a damaged message, looked for now if need be. Without one
// the stream fails, as before: raft tries again later, and the copy may
// have been found by then.
func (dr *damageRepairer) copyForSnapshot(source string, seq uint64, crc uint32) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotCopyTimeout)
	defer cancel()
	m, ok := dr.intact(ctx, msgKey{source: source, seq: seq}, true)
	if !ok || m.CRC != crc {
		return nil, false
	}
	return m.Payload, true
}

func (dr *damageRepairer) poke() {
	select {
	case dr.wake <- struct{}{}:
	default:
	}
}

// heal looks for an intact copy of k: on each other member of the group,
// then in each other group. It keeps the copy it finds.
func (dr *damageRepairer) heal(ctx context.Context, k msgKey) (repository.Message, bool) {
	dr.fetchMu.Lock()
	defer dr.fetchMu.Unlock()
	dr.mu.Lock()
	if m, ok := dr.copies[k]; ok { // found meanwhile
		dr.mu.Unlock()
		return m, true
	}
	if _, ok := dr.pending[k]; ok {
		dr.pending[k] = time.Now()
	}
	dr.mu.Unlock()
	for i, c := range append(append([]*groupclient.Client(nil), dr.members...), dr.groups...) {
		local := i < len(dr.members)
		m, ok := dr.copyFrom(ctx, c, k, local)
		if !ok {
			continue
		}
		dr.keep(k, m, c, local)
		return m, true
	}
	return repository.Message{}, false
}

// copyFrom asks one member (local) or one group for message k, and
// returns it if it came with a checksum and matches it.
func (dr *damageRepairer) copyFrom(ctx context.Context, c *groupclient.Client, k msgKey, local bool) (repository.Message, bool) {
	ctx, cancel := context.WithTimeout(ctx, healCallTimeout)
	defer cancel()
	rep, err := c.Fetch(ctx, &wire.Fetch{Source: k.source, From: k.seq, To: k.seq, MaxCount: 1, Local: local})
	if err != nil {
		dr.log.Debug("no copy of a damaged message from this store or group", "from", c.Addrs, "source", k.source, "seq", k.seq, "err", err)
		return repository.Message{}, false
	}
	for _, msg := range rep.Msgs {
		if msg.Seq != k.seq {
			continue
		}
		if !msg.Verified() {
			dr.copyRefused(k.source, msg, c.Addrs)
			return repository.Message{}, false
		}
		return repository.Message{Seq: msg.Seq, Payload: msg.Payload, CRC: msg.CRC}, true
	}
	return repository.Message{}, false
}

// copyRefused counts and logs a copy from another store that failed its
// checksum (damaged there, or on its way): it is never used.
func (dr *damageRepairer) copyRefused(source string, m wire.Msg, from []string) {
	dr.counts[countCopiesRefused].Add(1)
	dr.log.Warn("a copy of a message from another store does not match its checksum (damaged there or on its way); not used",
		"from", from, "source", source, "seq", m.Seq, "crc", m.CRC, "payload_crc", wire.Checksum(m.Payload))
}

// keep records the intact copy of k, within maxIntactCopies.
func (dr *damageRepairer) keep(k msgKey, m repository.Message, from *groupclient.Client, local bool) {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if _, ok := dr.copies[k]; ok {
		return
	}
	if dr.copyBytes+len(m.Payload) > maxIntactCopies {
		return // served this once; still missing here for later reads
	}
	dr.copies[k] = m
	dr.copyBytes += len(m.Payload)
	delete(dr.pending, k)
	dr.counts[countHealed].Add(1)
	where := "another group"
	if local {
		where = "another member"
	}
	dr.log.Info("serving an intact copy of a message damaged at rest", "source", k.source, "seq", k.seq, "copy_from", where, "addrs", from.Addrs)
}

// run looks for copies of the damaged messages that have none, whenever a
// read found one or every healRetry, and drops the copies of messages
// retention has released, until ctx ends.
func (dr *damageRepairer) run(ctx context.Context) {
	defer func() {
		for _, c := range append(dr.members, dr.groups...) {
			c.Close()
		}
	}()
	t := time.NewTicker(healRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dr.wake:
		case <-t.C:
		}
		dr.forgetReleased()
		for _, k := range dr.due() {
			if ctx.Err() != nil {
				return
			}
			dr.heal(ctx, k)
		}
	}
}

// due lists the damaged messages without a copy not looked for lately,
// while there is room to keep copies.
func (dr *damageRepairer) due() []msgKey {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if dr.copyBytes >= maxIntactCopies {
		return nil
	}
	var out []msgKey
	for k, tried := range dr.pending {
		if time.Since(tried) >= healRetry {
			out = append(out, k)
		}
	}
	return out
}

// forgetReleased drops what is known of damaged messages that retention
// has since released (or whose source is gone).
func (dr *damageRepairer) forgetReleased() {
	dr.mu.Lock()
	keys := make([]msgKey, 0, len(dr.copies)+len(dr.pending))
	for k := range dr.copies {
		keys = append(keys, k)
	}
	for k := range dr.pending {
		keys = append(keys, k)
	}
	dr.mu.Unlock()
	low := map[string]uint64{}
	for _, k := range keys {
		if _, ok := low[k.source]; !ok {
			info, known, err := dr.repo.Source(k.source)
			if err != nil {
				return
			}
			low[k.source] = 0
			if !known {
				low[k.source] = ^uint64(0)
			} else if info.TrimmedThrough > 0 {
				low[k.source] = info.TrimmedThrough
			}
		}
	}
	dr.mu.Lock()
	defer dr.mu.Unlock()
	for _, k := range keys {
		if k.seq > low[k.source] {
			continue
		}
		if m, ok := dr.copies[k]; ok {
			dr.copyBytes -= len(m.Payload)
			delete(dr.copies, k)
		}
		delete(dr.pending, k)
	}
}
