package repository

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// randomLog builds a seeded, bounded log exercising every command and
// outcome: in-order publishes, duplicates with different bytes, gaps, gap
// fills, registrations, group identity conflicts, peer group records (new,
// repeated, replaced, refused as the group's own), receiver positions (new,
// advanced, at or below the recorded one, on a source the group does not
// hold, with sequence number 0), trims (dropping, at or below the point
// already trimmed, beyond HighSeq, of a source the group does not hold or
// without messages, through 0) and publishes below the point trimmed, session
// expiries (of the session recorded, of a stale one, repeated, of a source
// the group does not hold, with an empty session) and registrations after
// them, forgotten sources (carried out, and refused as not empty or held), publishes reaching above the sequence-number ceiling, member
// addresses (recorded, the same again, moved again, refused), malformed and
// ignorable entries, entries without a command, and holes in the raft
// indexes (raft does not hand no-op entries to the FSM).
func randomLog(seed uint64, n int) []Entry {
	g := newLogGen(seed)
	var log []Entry
	index := uint64(0)
	for len(log) < n {
		var data []byte
		switch {
		case g.crng.IntN(100) < 2:
			index++
			data = g.ceilingPublish()
		case g.vrng.IntN(100) < 6:
			index++
			data = receiverEntry(g.vrng, g.registered, g.session, g.receiverSessions, int64(index))
		case g.mrng.IntN(100) < 2:
			index++
			data = memberEntry(g.mrng, int64(index))
		case g.xrng.IntN(100) < 3:
			index++
			data = g.expiry(index)
		case g.frng.IntN(100) < 2:
			index++
			data = g.forget()
		default:
			index += 1 + uint64(g.rng.IntN(10)/9) // an occasional hole
			data = g.entry(index)
		}
		log = append(log, Entry{Index: index, Term: 1 + index/100, Data: data})
	}
	return log
}

// logGen is randomLog's state: what it registered and published so far,
// and its generators. Each kind of entry added after the first has a
// generator of its own, so that adding it left the other entries (and so
// the outcomes they cover) as they were.
type logGen struct {
	rng  *rand.Rand // the first kinds: identities, registrations, positions, publishes, trims, odd entries
	xrng *rand.Rand // session expiries
	crng *rand.Rand // publishes reaching above the ceiling, refused wherever they come
	vrng *rand.Rand // receiver registrations, expiries, forgets and paced registrations
	mrng *rand.Rand // member addresses
	frng *rand.Rand // forgotten sources

	sources          []string
	registered       []string // sources, and epsilon, which is only ever registered
	high             map[string]uint64
	session          map[string]string // last registered
	receiverSessions map[string]string
}

func newLogGen(seed uint64) *logGen {
	sources := []string{"alpha", "beta", "gamma", "delta"}
	return &logGen{
		rng:              rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		xrng:             rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)),
		crng:             rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)),
		vrng:             rand.New(rand.NewPCG(seed, seed^0x61c8864680b583eb)),
		mrng:             rand.New(rand.NewPCG(seed, seed^0x94d049bb133111eb)),
		frng:             rand.New(rand.NewPCG(seed, seed^0xbf58476d1ce4e5b9)),
		sources:          sources,
		registered:       append(slices.Clone(sources), "epsilon"),
		high:             map[string]uint64{},
		session:          map[string]string{},
		receiverSessions: map[string]string{},
	}
}

// ceilingPublish is a Publish reaching above MaxSeq.
func (g *logGen) ceilingPublish() []byte {
	c := Publish{Source: g.sources[g.crng.IntN(len(g.sources))], Payloads: make([][]byte, 1+g.crng.IntN(3))}
	for i := range c.Payloads {
		c.Payloads[i] = []byte{byte(g.crng.Uint32())}
	}
	switch g.crng.IntN(3) {
	case 0:
		c.FirstSeq = MaxSeq + 1 - uint64(g.crng.IntN(len(c.Payloads))) // its last message is above
	case 1:
		c.FirstSeq = ^uint64(0) - uint64(g.crng.IntN(2)) // near 2^64, wrapping now and then
	default:
		c.FirstSeq = MaxSeq + 1 + g.crng.Uint64N(1<<60)
	}
	return EncodePublish(c)
}

// expiry is an ExpireSession: mostly of the session last registered
// (expired already now and then), sometimes of any session, rarely of none.
func (g *logGen) expiry(index uint64) []byte {
	src := "omega"
	if g.xrng.IntN(12) > 0 {
		src = g.registered[g.xrng.IntN(len(g.registered))]
	}
	s := g.session[src]
	switch m := g.xrng.IntN(10); {
	case m < 3:
		s = fmt.Sprintf("s%d", g.xrng.IntN(3))
	case m < 4:
		s = ""
	}
	return EncodeExpireSession(ExpireSession{Source: src, Session: s, UnixNano: int64(index)})
}

// forget is a ForgetSource: mostly of the session last registered (which
// an expiry may have freed), sometimes of another; of any source, so that
// most are refused (published, held, receivers recorded) and epsilon,
// which is only ever registered, is forgotten now and then.
func (g *logGen) forget() []byte {
	src := g.registered[g.frng.IntN(len(g.registered))]
	s := g.session[src]
	if g.frng.IntN(4) == 0 {
		s = fmt.Sprintf("s%d", g.frng.IntN(3))
	}
	return EncodeForgetSource(ForgetSource{Source: src, Session: s})
}

// entry is one of the first kinds of entries.
func (g *logGen) entry(index uint64) []byte {
	rng := g.rng
	switch k := rng.IntN(100); {
	case k < 3:
		return EncodeInitGroup(InitGroup{GroupID: fmt.Sprintf("g%d", rng.IntN(2)), Index: 1, UnixNano: int64(index)})
	case k < 6:
		return EncodePeerGroup(PeerGroup{Index: 1 + rng.IntN(3), GroupID: fmt.Sprintf("p%d", rng.IntN(2)), UnixNano: int64(index)})
	case k < 15:
		src := g.registered[rng.IntN(len(g.registered))]
		g.session[src] = fmt.Sprintf("s%d", rng.IntN(3))
		return EncodeRegister(Register{Source: src, Session: g.session[src], UnixNano: int64(index) * 1000})
	case k < 23:
		// Mostly sources the group holds by then; "omega" never is.
		src := "omega"
		if rng.IntN(10) > 0 {
			src = g.registered[rng.IntN(len(g.registered))]
		}
		seq := uint64(rng.IntN(int(g.high[src]) + 4)) // 0 now and then, often at or below a recorded position
		return EncodeConsumed(Consumed{Source: src, Receiver: fmt.Sprintf("r%d", rng.IntN(3)), Seq: seq, UnixNano: int64(index)})
	case k < 81:
		return g.publish()
	case k < 85:
		src := "omega"
		if rng.IntN(12) > 0 {
			src = g.registered[rng.IntN(len(g.registered))]
		}
		// 0 now and then, beyond HighSeq now and then.
		through := uint64(rng.IntN(int(g.high[src]) + 3))
		reasons := []string{RetentionBytes, RetentionMessages, "age", "operator"}
		return EncodeTrim(Trim{Source: src, Through: through, Reason: reasons[rng.IntN(len(reasons))], UnixNano: int64(index)})
	case k < 92:
		return nil
	case k < 96:
		return []byte{byte(CmdPublish), 0x93, byte(rng.Uint32())}
	default:
		return []byte{byte(IgnorableFlag | 0x33), byte(rng.Uint32())}
	}
}

// publish is a Publish in order, opening a gap, or duplicating and filling.
func (g *logGen) publish() []byte {
	rng := g.rng
	src := g.sources[rng.IntN(len(g.sources))]
	var first uint64
	switch m := rng.IntN(10); {
	case m < 5:
		first = g.high[src] + 1
	case m < 7:
		first = g.high[src] + 2 + uint64(rng.IntN(6)) // opens a gap
	default:
		first = 1 + uint64(rng.IntN(int(g.high[src])+2)) // duplicates and fills
	}
	c := Publish{Source: src, FirstSeq: first, Payloads: make([][]byte, 1+rng.IntN(6))}
	for i := range c.Payloads {
		c.Payloads[i] = make([]byte, rng.IntN(40))
		for j := range c.Payloads[i] {
			c.Payloads[i][j] = byte(rng.Uint32())
		}
	}
	if last := first + uint64(len(c.Payloads)) - 1; last > g.high[src] {
		g.high[src] = last
	}
	return EncodePublish(c)
}

// resultsByIndex keeps the results of applied (not skipped) entries, with
// errors reduced to their text so they compare.
func resultsByIndex(into map[uint64]string, res []Result) {
	for _, x := range res {
		if x.Skipped {
			continue
		}
		errText := ""
		if x.Err != nil {
			errText = x.Err.Error()
		}
		text := fmt.Sprintf("ignored=%v err=%q", x.Ignored, errText)
		if x.Register != nil {
			text += fmt.Sprintf(" register=%+v", *x.Register)
		}
		if p := x.Publish; p != nil {
			gap := "none"
			if p.NewGap != nil {
				gap = p.NewGap.String()
			}
			q := *p
			q.NewGap = nil
			text += fmt.Sprintf(" publish=%+v gap=%s", q, gap)
		}
		if x.InitGroup != nil {
			text += fmt.Sprintf(" init=%+v", *x.InitGroup)
		}
		if x.PeerGroup != nil {
			text += fmt.Sprintf(" peer=%+v", *x.PeerGroup)
		}
		if x.Consumed != nil {
			text += fmt.Sprintf(" consumed=%+v", *x.Consumed)
		}
		if x.Trim != nil {
			text += fmt.Sprintf(" trim=%+v", *x.Trim)
		}
		if x.Expire != nil {
			text += fmt.Sprintf(" expire=%+v", *x.Expire)
		}
		if x.Receiver != nil {
			text += fmt.Sprintf(" receiver=%+v", *x.Receiver)
		}
		into[x.Index] = text
	}
}

func TestDeterministicApply(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			log := randomLog(seed, 1500)
			last := log[len(log)-1].Index

			ref := newModel()
			for _, e := range log {
				ref.apply(e)
			}

			// One batch.
			whole := openTest(t)
			wantResults := map[uint64]string{}
			resultsByIndex(wantResults, mustApply(t, whole, log))
			ref.check(t, whole)
			want := mustDigest(t, whole)

			// Random batch sizes, each batch applied twice.
			rng := rand.New(rand.NewPCG(seed, 7))
			split := openTest(t)
			got := map[uint64]string{}
			for i := 0; i < len(log); {
				j := min(len(log), i+1+rng.IntN(40))
				resultsByIndex(got, mustApply(t, split, log[i:j]))
				for _, x := range mustApply(t, split, log[i:j]) {
					if !x.Skipped {
						t.Fatalf("entry %d applied twice", x.Index)
					}
				}
				i = j
			}
			if !reflect.DeepEqual(got, wantResults) {
				t.Error("results differ with the batch split")
			}

			// Small batches with restarts, each restart replaying an
			// overlapping range as raft does after NoSnapshotRestoreOnStart.
			path := filepath.Join(t.TempDir(), "restarts.db")
			restarted := openAt(t, path)
			for i := 0; i < len(log); {
				j := min(len(log), i+1+rng.IntN(8))
				mustApply(t, restarted, log[i:j])
				if rng.IntN(10) == 0 {
					restarted.Close()
					restarted = openAt(t, path)
					mustApply(t, restarted, log[max(0, i-rng.IntN(30)):j])
				}
				i = j
			}

			// Deferred commits (pending.go): batches left uncommitted and
			// committed together at random points; now and then a crash,
			// which loses what was not committed, and raft's replay of an
			// overlapping range from before the committed index. Every
			// result, first or replayed, is the one-batch result.
			deferred := openTest(t)
			deferredResults := map[uint64]string{}
			for i := 0; i < len(log); {
				j := min(len(log), i+1+rng.IntN(20))
				res, err := deferred.ApplyDeferred(log[i:j], nil)
				if err != nil {
					t.Fatal(err)
				}
				resultsByIndex(deferredResults, res)
				switch rng.IntN(10) {
				case 0, 1:
					if err := deferred.Commit(); err != nil {
						t.Fatal(err)
					}
				case 2:
					deferred.wmu.Lock()
					deferred.rollbackLocked() // the crash
					deferred.wmu.Unlock()
					committed := deferred.AppliedIndex()
					from := sort.Search(len(log), func(k int) bool { return log[k].Index > committed })
					replayed := map[uint64]string{}
					resultsByIndex(replayed, mustApply(t, deferred, log[max(0, from-rng.IntN(10)):j]))
					for idx, text := range replayed {
						if text != wantResults[idx] {
							t.Fatalf("entry %d replayed after a crash: %s, want %s", idx, text, wantResults[idx])
						}
					}
				}
				i = j
			}
			if err := deferred.Commit(); err != nil {
				t.Fatal(err)
			}
			for idx, text := range deferredResults {
				if text != wantResults[idx] {
					t.Fatalf("entry %d deferred: %s, want %s", idx, text, wantResults[idx])
				}
			}

			for name, r := range map[string]*Repo{"split": split, "restarted": restarted, "deferred": deferred} {
				if d := mustDigest(t, r); d != want {
					t.Errorf("%s: digest %s, want %s", name, d, want)
				}
				if r.AppliedIndex() != last {
					t.Errorf("%s: AppliedIndex %d, want %d", name, r.AppliedIndex(), last)
				}
			}
		})
	}
}

// The digest must see every kind of difference, or the tests above prove
// nothing.
func TestDigestDetectsDifferences(t *testing.T) {
	base := []any{InitGroup{GroupID: "g", Index: 1}, Register{Source: "a", Session: "s", UnixNano: 1}, pub("a", 1, 3)}
	variants := map[string][]any{
		"group id":      {InitGroup{GroupID: "h", Index: 1}, base[1], base[2]},
		"group index":   {InitGroup{GroupID: "g", Index: 2}, base[1], base[2]},
		"session":       {base[0], Register{Source: "a", Session: "t", UnixNano: 1}, base[2]},
		"register time": {base[0], Register{Source: "a", Session: "s", UnixNano: 2}, base[2]},
		"source name":   {base[0], Register{Source: "b", Session: "s", UnixNano: 1}, pub("b", 1, 3)},
		"payload":       {base[0], base[1], Publish{Source: "a", FirstSeq: 1, Payloads: [][]byte{[]byte("a-1"), []byte("a-2"), []byte("a-4")}}},
		"gap":           {base[0], base[1], pub("a", 2, 2)},
		"extra message": {base[0], base[1], pub("a", 1, 4)},
		"peer group":    {base[0], base[1], base[2], PeerGroup{Index: 2, GroupID: "p"}},
		"receiver":      {base[0], base[1], base[2], Consumed{Source: "a", Receiver: "r", Seq: 1}},
		"trim":          {base[0], base[1], base[2], Trim{Source: "a", Through: 1}},
		"registration":  {base[0], base[1], base[2], RegisterReceiver{Source: "a", Receiver: "r", Session: "x"}},
		"pacing":        {base[0], RegisterPaced{Register: base[1].(Register), Pacing: PacingBlocking}, base[2]},
		"expiry":        {base[0], base[1], base[2], ExpireSession{Source: "a", Session: "s", UnixNano: 1}},
		"member":        {base[0], base[1], base[2], MemberAddress{Name: "G1S1", RaftAddr: "h:1", ClientAddr: "h:2", UnixNano: 1}},
	}
	r := openTest(t)
	mustApply(t, r, logOf(1, base...))
	want := mustDigest(t, r)

	again := openTest(t)
	mustApply(t, again, logOf(5, base...)) // other indexes: not part of the digest
	if mustDigest(t, again) != want {
		t.Error("digest depends on raft indexes")
	}
	for name, cmds := range variants {
		v := openTest(t)
		mustApply(t, v, logOf(1, cmds...))
		if mustDigest(t, v) == want {
			t.Errorf("digest blind to a different %s", name)
		}
	}
}

func TestRandomLogCoversEveryOutcome(t *testing.T) {
	r := openTest(t)
	seen := map[string]int{}
	log := randomLog(1, 1500)
	e := map[uint64]CommandType{} // each entry's command type
	for _, x := range log {
		if len(x.Data) > 0 {
			e[x.Index] = CommandType(x.Data[0])
		}
	}
	results := mustApply(t, r, log)
	for _, o := range memberOutcomes(log, results) {
		seen[o]++
	}
	for _, x := range results {
		if x.Register != nil && e[x.Index] == CmdRegisterPaced {
			seen["register-paced"]++
		}
		switch {
		case x.Ignored:
			seen["ignored"]++
		case errors.Is(x.Err, ErrUnknownSource):
			seen["unknown-source"]++
		case x.Trim != nil && x.Trim.Dropped > 0:
			seen["trim-dropped"]++
		case x.Trim != nil && x.Trim.Advanced:
			seen["trim-advanced-nothing-dropped"]++
		case x.Trim != nil:
			seen["trim-no-op"]++
		case x.Expire != nil && x.Expire.Expired:
			seen["expire-expired"]++
		case x.Expire != nil:
			seen["expire-stale"]++
		case x.Receiver != nil:
			seen[receiverOutcome(x.Receiver, e[x.Index])]++
		case errors.Is(x.Err, ErrSeqCeiling):
			seen["seq-ceiling"]++
		case x.Err != nil:
			seen["err"]++
		case x.InitGroup != nil && x.InitGroup.AlreadyInitialised:
			seen["init-again"]++
		case x.PeerGroup != nil && x.PeerGroup.Previous != "" && x.PeerGroup.Changed:
			seen["peer-replaced"]++
		case x.PeerGroup != nil && !x.PeerGroup.Changed:
			seen["peer-same"]++
		case x.Consumed != nil && x.Consumed.Advanced:
			seen["consumed-advanced"]++
		case x.Consumed != nil:
			seen["consumed-not-advanced"]++
		case x.Register != nil && x.Register.Created:
			seen["register-new"]++
		case x.Register != nil:
			seen["register-existing"]++
		case x.Publish != nil:
			if x.Publish.BelowRetention > 0 {
				seen["below-retention"]++
			}
			if x.Publish.NewGap != nil {
				seen["gap"]++
			}
			if x.Publish.Duplicates > 0 {
				seen["duplicates"]++
			}
			if x.Publish.Stored > 0 && x.Publish.LastSeq < x.Publish.HighSeq {
				seen["fill"]++
			}
		case x.InitGroup == nil && x.PeerGroup == nil:
			seen["no-command"]++
		}
	}
	for _, k := range []string{"ignored", "err", "init-again", "peer-replaced", "peer-same", "unknown-source", "consumed-advanced", "consumed-not-advanced",
		"trim-dropped", "trim-advanced-nothing-dropped", "trim-no-op", "below-retention", "expire-expired", "expire-stale",
		"register-new", "register-existing", "gap", "duplicates", "fill", "no-command", "seq-ceiling",
		"receiver-registered-new", "receiver-registered-again", "receiver-expired", "receiver-expire-no-op",
		"receiver-forgotten", "receiver-forget-no-op", "register-paced",
		"member-recorded", "member-same", "member-moved-again", "member-refused"} {
		if seen[k] == 0 {
			t.Errorf("random log never produces outcome %q: %v", k, seen)
		}
	}
}
