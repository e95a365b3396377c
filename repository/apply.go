package repository

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// msgsFillPercent packs message pages nearly full: runs are keyed by their
// first sequence number, mostly appended in order, so pages are never split
// in the middle except by a gap fill.
const msgsFillPercent = 0.95

// Entry is one committed raft log entry as the repository sees it.
type Entry struct {
	Index uint64 // raft log index
	Term  uint64 // raft term
	Data  []byte // encoded command; nil or empty for entries that carry none. Not modified, and not retained after Apply returns
}

// Result is the outcome of one Entry. Exactly one of Register, Publish,
// InitGroup, PeerGroup, Consumed, Trim, Expire and Receiver is set when the
// command took effect (Register for a RegisterPaced too); none when the entry
// was skipped, ignored, empty, or refused with Err.
type Result struct {
	Index   uint64
	Skipped bool  // Index ≤ the applied index: applied before, nothing changed
	Ignored bool  // an unknown command marked ignorable: only the index advanced
	Err     error // deterministic refusal of the command (ErrBadCommand, ErrGroupMismatch, ErrUnknownSource); the index still advances

	Register  *RegisterResult
	Publish   *PublishResult
	InitGroup *InitGroupResult
	PeerGroup *PeerGroupResult
	Consumed  *ConsumedResult
	Trim      *TrimResult
	Expire    *ExpireResult
	Receiver  *ReceiverResult // RegisterReceiver, ExpireReceiver, ForgetReceiver
}

// RegisterResult answers a registration: where the source's repository
// stands, so the publisher resumes at HighSeq+1.
type RegisterResult struct {
	Source          string
	HighSeq, LowSeq uint64
	Created         bool // the group had never seen the source
}

// PublishResult says what a Publish did.
type PublishResult struct {
	Source            string
	FirstSeq, LastSeq uint64 // the command's range
	Stored            int    // messages newly stored
	Duplicates        int    // messages already held: no-ops, still acknowledged
	HighSeq           uint64 // the source's highest sequence number afterwards
	NewGap            *Range // gap opened because FirstSeq > HighSeq+1, if any
	// Conflicts counts duplicates whose payload differs from the one held
	// (the held one is kept); FirstConflict is the first such sequence.
	Conflicts     int
	FirstConflict uint64
	// BelowRetention counts messages at or below the source's TrimmedThrough:
	// released by retention, so not stored again (a resend, or a repair from
	// a group that still holds them). No-ops like Duplicates; not counted
	// in Duplicates.
	BelowRetention int
	// Lost are the ranges of those the group does not know it held: it
	// never did (they were in a gap when released), or its record of the
	// released gaps no longer reaches back to them. The others were held
	// until retention released them: stable in the group, as a duplicate
	// is. In order, within [FirstSeq, LastSeq].
	Lost []Range
}

// addLost adds seq, above every lost number so far, to pr.Lost.
func (pr *PublishResult) addLost(seq uint64) {
	if n := len(pr.Lost); n > 0 && pr.Lost[n-1].To+1 == seq {
		pr.Lost[n-1].To = seq
		return
	}
	pr.Lost = append(pr.Lost, Range{From: seq, To: seq})
}

// InitGroupResult says whether the group identity was recorded.
type InitGroupResult struct {
	GroupID            string
	AlreadyInitialised bool // the same identity was already recorded
}

// PeerGroupResult says what a PeerGroup did to the record of group Index.
type PeerGroupResult struct {
	Index    int
	GroupID  string // the identity now recorded: the command's
	Previous string // the identity recorded before GroupID, if it ever changed ("" if not)
	Changed  bool   // the record is new or GroupID replaced another identity; false if it was already recorded
}

// ConsumedResult says what a Consumed did to the position of Receiver on
// Source.
type ConsumedResult struct {
	Source   string
	Receiver string
	Seq      uint64 // the position recorded afterwards: the command's if Advanced, else the one already recorded
	Advanced bool   // the position is new or moved forward; false if the command's Seq was at or below it
}

// TrimResult says what a Trim did to Source.
type TrimResult struct {
	Source       string
	Through      uint64 // the source's TrimmedThrough afterwards: the command's Through (at most HighSeq) if Advanced, else the one already recorded
	Advanced     bool   // TrimmedThrough moved forward; false if the command's Through (capped at HighSeq) was at or below it: nothing dropped
	Dropped      uint64 // messages deleted
	DroppedBytes uint64 // their payload bytes
	LowSeq       uint64 // the source's oldest message afterwards; 0 if none is left
}

// ExpireResult says what an ExpireSession did to Source.
type ExpireResult struct {
	Source  string
	Session string // the command's session
	Expired bool   // Session was the one recorded and is now cleared; false if another session (or none) was recorded: nothing changed
}

// Apply applies a batch of committed entries in one bbolt read-write
// transaction, so a batch costs one fsync. Entries are taken in order;
// one whose Index is not above the applied index (including earlier entries
// of the batch) is Skipped: after a restart raft replays entries the
// repository already holds. The applied index and term are set to the last
// applied entry's in the same transaction as the data.
//
// The returned slice has one Result per entry. A non-nil error means the
// batch could not be applied and nothing of it was: storage failed, or an
// entry carries a command type this binary does not know and that is not
// marked ignorable (ErrUnknownCommand; applying around it would diverge from
// upgraded peers). The caller must then stop the store rather than go on.
//
// Apply is deterministic: the results and the resulting state depend only on
// the state before and on the entries, never on a clock, randomness or map
// order, and not on how the log is cut into batches.
func (r *Repo) Apply(entries []Entry) ([]Result, error) {
	return r.ApplyDecided(entries, nil)
}

// ApplyDecided is Apply that also hands the results to decided as soon as
// every entry of the batch is applied, before the transaction commits and
// its fsync. The results are final then: should the commit fail, the caller
// stops the store, and the replay of the same entries gives the same results
// (Apply is deterministic). This lets a store answer a request once its
// entry is committed in the raft log and its result known, without waiting
// for the repository's own fsync. decided is not called when nothing new is
// applied or when applying fails; it runs inside the write transaction, so
// it must be quick, and must not change results.
func (r *Repo) ApplyDecided(entries []Entry, decided func([]Result)) (results []Result, err error) {
	err = r.writing(func() error {
		if results, err = r.applyPending(entries, decided); err != nil {
			return err
		}
		return r.commitLocked()
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// applyPending applies entries into the open write transaction (opening one
// if none is), and leaves it open: ApplyDecided and ApplyDeferred decide
// when it commits. On an error the transaction is rolled back whole, with
// every batch it held (pending.go). The caller holds r.mu shared and r.wmu.
func (r *Repo) applyPending(entries []Entry, decided func([]Result)) ([]Result, error) {
	results := make([]Result, len(entries))
	for i := range entries {
		results[i].Index = entries[i].Index
	}
	// Fast path for a replay: nothing new means no write transaction. The
	// cached index never runs ahead of the file, so a stale value only costs
	// a transaction that decides again below.
	if !anyAbove(entries, r.applied.Load()) {
		for i := range results {
			results[i].Skipped = true
		}
		return results, nil
	}

	var healed []damagedKey
	err := r.guard("apply entries", func() error {
		p, err := r.pendingTx()
		if err != nil {
			return err
		}
		a := newApplier(p.tx)
		a.repo, a.logRuns = r, r.entries != nil
		defer func() { healed = a.healed }()
		applied, _ := readApplied(a.meta)
		lastIndex, lastTerm := applied, uint64(0)
		for i := range entries {
			e := &entries[i]
			res := &results[i]
			*res = Result{Index: e.Index}
			if e.Index <= lastIndex {
				res.Skipped = true
				continue
			}
			if err := a.apply(e, res); err != nil {
				return err
			}
			lastIndex, lastTerm = e.Index, e.Term
		}
		if lastIndex == applied {
			return nil // everything skipped after all
		}
		if err := a.flush(); err != nil {
			return err
		}
		if err := a.meta.Put(keyAppliedIndex, u64(lastIndex)); err != nil {
			return err
		}
		if err := a.meta.Put(keyAppliedTerm, u64(lastTerm)); err != nil {
			return err
		}
		p.add(lastIndex, lastTerm, a.group, lowestLogRef(a.meta), len(entries))
		if decided != nil {
			decided(results)
		}
		return nil
	})
	if err != nil {
		r.rollbackLocked()
		var unknown *unknownCommandError
		if errors.As(err, &unknown) {
			return nil, err
		}
		return nil, fmt.Errorf("apply entries %d..%d to %s: %w", entries[0].Index, entries[len(entries)-1].Index, r.path, err)
	}
	if r.pend != nil {
		r.pend.healed = append(r.pend.healed, healed...)
	}
	return results, nil
}

func anyAbove(entries []Entry, index uint64) bool {
	for i := range entries {
		if entries[i].Index > index {
			return true
		}
	}
	return false
}

// unknownCommandError stops a batch holding a command this binary cannot
// apply.
type unknownCommandError struct {
	index uint64
	err   error
}

func (e *unknownCommandError) Error() string {
	return fmt.Sprintf("cannot apply raft entry %d: %v; upgrade umstored on this host (nothing of the batch was applied)", e.index, e.err)
}

func (e *unknownCommandError) Unwrap() error { return e.err }

// applier carries one Apply transaction. Sources touched by the batch are
// read once and written back once, in first-touch order, by flush.
type applier struct {
	repo    *Repo
	healed  []damagedKey // damaged messages replaced by this batch (heal.go)
	logRuns bool         // store log runs (Options.Log set), else inline runs
	index   uint64       // the entry being applied
	tx      *bolt.Tx
	meta    *bolt.Bucket
	sources *bolt.Bucket
	open    map[string]*openSource // lookups only, never iterated
	order   []*openSource
	group   *groupInfo // set when InitGroup recorded an identity
	key     [8]byte
}

type openSource struct {
	name  string
	b     *bolt.Bucket
	msgs  *bolt.Bucket
	state sourceState
}

func newApplier(tx *bolt.Tx) *applier {
	return &applier{
		tx:      tx,
		meta:    tx.Bucket(bucketMeta),
		sources: tx.Bucket(bucketSources),
		open:    make(map[string]*openSource),
	}
}

func (a *applier) initGroup(c InitGroup, res *Result) error {
	if c.GroupID == "" {
		res.Err = fmt.Errorf("%w: InitGroup with an empty group id", ErrBadCommand)
		return nil
	}
	cur := readGroup(a.meta) // sees this transaction's own writes
	switch {
	case cur.id == "":
		if err := a.meta.Put(keyGroupID, []byte(c.GroupID)); err != nil {
			return err
		}
		if err := a.meta.Put(keyGroupIndex, u64(uint64(int64(c.Index)))); err != nil {
			return err
		}
		if err := a.meta.Put(keyGroupCreated, u64(uint64(c.UnixNano))); err != nil {
			return err
		}
		a.group = &groupInfo{id: c.GroupID, index: c.Index, created: c.UnixNano}
		res.InitGroup = &InitGroupResult{GroupID: c.GroupID}
	case cur.id == c.GroupID && cur.index == c.Index:
		res.InitGroup = &InitGroupResult{GroupID: c.GroupID, AlreadyInitialised: true}
	default:
		res.Err = fmt.Errorf("%w: repository holds group %q (index %d), entry names group %q (index %d)",
			ErrGroupMismatch, cur.id, cur.index, c.GroupID, c.Index)
	}
	return nil
}

// peerGroup records another group's identity. The same identity again
// changes nothing (not even its time); a different one replaces it, keeping
// the replaced identity as Previous.
func (a *applier) peerGroup(c PeerGroup, res *Result) error {
	switch {
	case c.Index < 1:
		res.Err = fmt.Errorf("%w: PeerGroup for group index %d; indexes start at 1", ErrBadCommand, c.Index)
		return nil
	case c.GroupID == "":
		res.Err = fmt.Errorf("%w: PeerGroup for group %d with an empty group id", ErrBadCommand, c.Index)
		return nil
	}
	if own := readGroup(a.meta); own.index == c.Index {
		res.Err = fmt.Errorf("%w: PeerGroup names group index %d, this repository's own group (%q); a group does not record itself as a peer",
			ErrBadCommand, c.Index, own.id)
		return nil
	}
	b, err := a.meta.CreateBucketIfNotExists(bucketPeerGroups)
	if err != nil {
		return err
	}
	key := peerKey(c.Index)
	var cur PeerGroupRecord
	if v := b.Get(key); v != nil {
		if cur, err = decodePeer(key, v); err != nil {
			return err
		}
	}
	pr := &PeerGroupResult{Index: c.Index, GroupID: c.GroupID, Previous: cur.Previous}
	res.PeerGroup = pr
	if cur.GroupID == c.GroupID {
		return nil
	}
	if cur.GroupID != "" {
		pr.Previous = cur.GroupID
	}
	pr.Changed = true
	v, err := encodePeer(&peerRecord{GroupID: c.GroupID, Since: c.UnixNano, Previous: pr.Previous})
	if err != nil {
		return fmt.Errorf("encode peer group %d: %w", c.Index, err)
	}
	return b.Put(key, v)
}

func (a *applier) register(c Register, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	src, created, err := a.source(c.Source)
	if err != nil {
		return err
	}
	if created {
		src.state.Created = c.UnixNano
	}
	src.state.Session = c.Session // after an expiry too; ExpiredSession stays as it was
	src.state.LastRegister = c.UnixNano
	res.Register = &RegisterResult{
		Source:  c.Source,
		HighSeq: src.state.HighSeq,
		LowSeq:  src.state.LowSeq,
		Created: created,
	}
	return nil
}

// trim drops the oldest messages of a source the group knows, through
// c.Through capped at HighSeq. TrimmedThrough only moves forward: a Through
// at or below it changes nothing.
func (a *applier) trim(c Trim, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	if c.Through == 0 {
		res.Err = fmt.Errorf("%w: Trim of %q through sequence number 0; sequence numbers start at 1", ErrBadCommand, c.Source)
		return nil
	}
	// A Trim never creates a source.
	src, err := a.existingSource(c.Source)
	if err != nil {
		return err
	}
	if src == nil {
		res.Err = fmt.Errorf("%w %q: Trim through %d; only sources the group holds are trimmed", ErrUnknownSource, c.Source, c.Through)
		return nil
	}
	st := &src.state
	tr := &TrimResult{Source: c.Source, Through: st.TrimmedThrough, LowSeq: st.LowSeq}
	res.Trim = tr
	through := min(c.Through, st.HighSeq) // never release what the group has not seen
	if through <= st.TrimmedThrough {
		return nil
	}
	low, err := a.dropThrough(src.msgs, through, tr)
	if err != nil {
		return fmt.Errorf("source %q: %w", c.Source, err)
	}
	if tr.Dropped > st.Count || tr.DroppedBytes > st.Bytes {
		return fmt.Errorf("%w: source %q: trimming through %d drops %d messages of %d bytes, its bookkeeping counts only %d of %d bytes",
			ErrFormat, c.Source, through, tr.Dropped, tr.DroppedBytes, st.Count, st.Bytes)
	}
	st.Count -= tr.Dropped
	st.Bytes -= tr.DroppedBytes
	st.LowSeq = low
	st.releaseGaps(through)
	tr.Through, tr.Advanced, tr.LowSeq = through, true, st.LowSeq
	return nil
}

// expireSession frees a source the group knows from the session c names, if
// that session is still the one recorded: a stale or repeated expiry changes
// nothing (not even the time recorded).
func (a *applier) expireSession(c ExpireSession, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	if c.Session == "" {
		res.Err = fmt.Errorf("%w: ExpireSession on %q with an empty session", ErrBadCommand, c.Source)
		return nil
	}
	// An ExpireSession never creates a source.
	src, err := a.existingSource(c.Source)
	if err != nil {
		return err
	}
	if src == nil {
		res.Err = fmt.Errorf("%w %q: ExpireSession of session %q; only sources the group holds have sessions", ErrUnknownSource, c.Source, c.Session)
		return nil
	}
	er := &ExpireResult{Source: c.Source, Session: c.Session}
	res.Expire = er
	st := &src.state
	if st.Session != c.Session {
		return nil // a new publisher registered meanwhile, or already expired
	}
	st.Session = ""
	st.ExpiredSession, st.ExpiredUnixNano = c.Session, c.UnixNano
	er.Expired = true
	return nil
}

// source returns the named source opened in this transaction, creating its
// buckets when the group has never seen it.
func (a *applier) source(name string) (src *openSource, created bool, err error) {
	if src := a.open[name]; src != nil {
		return src, false, nil
	}
	src = &openSource{name: name}
	src.b = a.sources.Bucket([]byte(name))
	if src.b == nil {
		created = true
		if src.b, err = a.sources.CreateBucket([]byte(name)); err != nil {
			return nil, false, err
		}
		if src.msgs, err = src.b.CreateBucket(bucketMsgs); err != nil {
			return nil, false, err
		}
	} else {
		if src.msgs = src.b.Bucket(bucketMsgs); src.msgs == nil {
			return nil, false, fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, name)
		}
		if src.state, err = decodeState(src.b.Get(keyState)); err != nil {
			return nil, false, fmt.Errorf("source %q: %w", name, err)
		}
	}
	src.msgs.FillPercent = msgsFillPercent
	a.open[name] = src
	a.order = append(a.order, src)
	return src, created, nil
}

// existingSource is source for a source the repository already holds
// (sources created earlier in this transaction included); nil, and nothing
// created, for one it does not.
func (a *applier) existingSource(name string) (*openSource, error) {
	if a.open[name] == nil && a.sources.Bucket([]byte(name)) == nil {
		return nil, nil
	}
	src, _, err := a.source(name)
	return src, err
}

// flush writes back the state of every source the batch touched.
func (a *applier) flush() error {
	for _, src := range a.order {
		b, err := encodeState(&src.state)
		if err != nil {
			return fmt.Errorf("encode state of source %q: %w", src.name, err)
		}
		if err := src.b.Put(keyState, b); err != nil {
			return err
		}
	}
	return nil
}
