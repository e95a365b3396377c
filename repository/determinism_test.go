package repository

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
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
// them, publishes reaching above the sequence-number ceiling, member
// addresses (recorded, the same again, moved again, refused), malformed and
// ignorable entries, entries without a command, and holes in the raft
// indexes (raft does not hand no-op entries to the FSM).
func randomLog(seed uint64, n int) []Entry {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sources := []string{"alpha", "beta", "gamma", "delta"}
	registered := append(slices.Clone(sources), "epsilon") // epsilon is only ever registered
	high := map[string]uint64{}
	session := map[string]string{} // last registered
	// Session expiries come from their own generator, so that adding them
	// left the other entries (and so the outcomes they cover) as they were.
	xrng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	// Publishes reaching above the ceiling too, refused wherever they come.
	crng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	// Receiver registrations, expiries, forgets and paced registrations,
	// from their own generator too.
	vrng := rand.New(rand.NewPCG(seed, seed^0x61c8864680b583eb))
	receiverSessions := map[string]string{}
	// Member addresses, from their own generator as well.
	mrng := rand.New(rand.NewPCG(seed, seed^0x94d049bb133111eb))
	var log []Entry
	index := uint64(0)
	for len(log) < n {
		if crng.IntN(100) < 2 {
			c := Publish{Source: sources[crng.IntN(len(sources))], Payloads: make([][]byte, 1+crng.IntN(3))}
			for i := range c.Payloads {
				c.Payloads[i] = []byte{byte(crng.Uint32())}
			}
			switch crng.IntN(3) {
			case 0:
				c.FirstSeq = MaxSeq + 1 - uint64(crng.IntN(len(c.Payloads))) // its last message is above
			case 1:
				c.FirstSeq = ^uint64(0) - uint64(crng.IntN(2)) // near 2^64, wrapping now and then
			default:
				c.FirstSeq = MaxSeq + 1 + crng.Uint64N(1<<60)
			}
			index++
			log = append(log, Entry{Index: index, Term: 1 + index/100, Data: EncodePublish(c)})
			continue
		}
		if vrng.IntN(100) < 6 {
			index++
			log = append(log, Entry{Index: index, Term: 1 + index/100, Data: receiverEntry(vrng, registered, session, receiverSessions, int64(index))})
			continue
		}
		if mrng.IntN(100) < 2 {
			index++
			log = append(log, Entry{Index: index, Term: 1 + index/100, Data: memberEntry(mrng, int64(index))})
			continue
		}
		if xrng.IntN(100) < 3 {
			src := "omega"
			if xrng.IntN(12) > 0 {
				src = registered[xrng.IntN(len(registered))]
			}
			// Mostly the session last registered (expired already now and
			// then), sometimes any session, rarely none.
			s := session[src]
			switch m := xrng.IntN(10); {
			case m < 3:
				s = fmt.Sprintf("s%d", xrng.IntN(3))
			case m < 4:
				s = ""
			}
			index++
			log = append(log, Entry{Index: index, Term: 1 + index/100, Data: EncodeExpireSession(ExpireSession{Source: src, Session: s, UnixNano: int64(index)})})
			continue
		}
		index += 1 + uint64(rng.IntN(10)/9) // an occasional hole
		var data []byte
		switch k := rng.IntN(100); {
		case k < 3:
			data = EncodeInitGroup(InitGroup{GroupID: fmt.Sprintf("g%d", rng.IntN(2)), Index: 1, UnixNano: int64(index)})
		case k < 6:
			data = EncodePeerGroup(PeerGroup{Index: 1 + rng.IntN(3), GroupID: fmt.Sprintf("p%d", rng.IntN(2)), UnixNano: int64(index)})
		case k < 15:
			src := registered[rng.IntN(len(registered))]
			session[src] = fmt.Sprintf("s%d", rng.IntN(3))
			data = EncodeRegister(Register{Source: src, Session: session[src], UnixNano: int64(index) * 1000})
		case k < 23:
			// Mostly sources the group holds by then; "omega" never is.
			src := "omega"
			if rng.IntN(10) > 0 {
				src = registered[rng.IntN(len(registered))]
			}
			seq := uint64(rng.IntN(int(high[src]) + 4)) // 0 now and then, often at or below a recorded position
			data = EncodeConsumed(Consumed{Source: src, Receiver: fmt.Sprintf("r%d", rng.IntN(3)), Seq: seq, UnixNano: int64(index)})
		case k < 81:
			src := sources[rng.IntN(len(sources))]
			var first uint64
			switch m := rng.IntN(10); {
			case m < 5:
				first = high[src] + 1
			case m < 7:
				first = high[src] + 2 + uint64(rng.IntN(6)) // opens a gap
			default:
				first = 1 + uint64(rng.IntN(int(high[src])+2)) // duplicates and fills
			}
			c := Publish{Source: src, FirstSeq: first, Payloads: make([][]byte, 1+rng.IntN(6))}
			for i := range c.Payloads {
				c.Payloads[i] = make([]byte, rng.IntN(40))
				for j := range c.Payloads[i] {
					c.Payloads[i][j] = byte(rng.Uint32())
				}
			}
			if last := first + uint64(len(c.Payloads)) - 1; last > high[src] {
				high[src] = last
			}
			data = EncodePublish(c)
		case k < 85:
			src := "omega"
			if rng.IntN(12) > 0 {
				src = registered[rng.IntN(len(registered))]
			}
			// 0 now and then, beyond HighSeq now and then.
			through := uint64(rng.IntN(int(high[src]) + 3))
			reasons := []string{RetentionBytes, RetentionMessages, "age", "operator"}
			data = EncodeTrim(Trim{Source: src, Through: through, Reason: reasons[rng.IntN(len(reasons))], UnixNano: int64(index)})
		case k < 92:
			data = nil
		case k < 96:
			data = []byte{byte(CmdPublish), 0x93, byte(rng.Uint32())}
		default:
			data = []byte{byte(IgnorableFlag | 0x33), byte(rng.Uint32())}
		}
		log = append(log, Entry{Index: index, Term: 1 + index/100, Data: data})
	}
	return log
}

// model is a deliberately simple reference implementation of the apply
// rules: the first payload stored for a sequence number wins; a receiver's
// position is the highest one consumed, with the time it was first recorded;
// a trim deletes everything at or below the lower of its Through and the
// highest sequence number ever stored, and nothing at or below the highest
// such point is stored again; a session is expired only if it is the one
// the last registration (or expiry) left.
type model struct {
	msgs      map[string]map[uint64][]byte
	regs      map[string]Register
	created   map[string]int64
	receivers map[string]map[string]ReceiverPosition
	high      map[string]uint64 // highest sequence number ever stored
	trimmed   map[string]uint64
	session   map[string]string        // the current session: the last registered, "" once expired
	expired   map[string]ExpireSession // the last expiry that took effect
	pacing    map[string]Pacing        // the last RegisterPaced's mode
	members   map[string]MemberAddressRecord
}

func newModel() *model {
	return &model{
		msgs: map[string]map[uint64][]byte{}, regs: map[string]Register{}, created: map[string]int64{},
		receivers: map[string]map[string]ReceiverPosition{}, high: map[string]uint64{}, trimmed: map[string]uint64{},
		session: map[string]string{}, expired: map[string]ExpireSession{}, pacing: map[string]Pacing{},
		members: map[string]MemberAddressRecord{},
	}
}

func (m *model) apply(e Entry) {
	if len(e.Data) == 0 {
		return
	}
	cmd, err := DecodeCommand(e.Data)
	if err != nil {
		return
	}
	if m.applyReceiver(cmd) || m.applyMember(cmd) {
		return
	}
	switch c := cmd.(type) {
	case Register:
		if m.msgs[c.Source] == nil {
			m.msgs[c.Source] = map[uint64][]byte{}
			m.created[c.Source] = c.UnixNano
		}
		m.regs[c.Source] = c
		m.session[c.Source] = c.Session
	case ExpireSession:
		if m.msgs[c.Source] == nil || c.Session == "" || m.session[c.Source] != c.Session {
			return
		}
		m.session[c.Source] = ""
		m.expired[c.Source] = c
	case Publish:
		if c.FirstSeq > MaxSeq || uint64(len(c.Payloads))-1 > MaxSeq-c.FirstSeq {
			return // above the ceiling: refused, nothing created
		}
		if m.msgs[c.Source] == nil {
			m.msgs[c.Source] = map[uint64][]byte{}
		}
		for i, p := range c.Payloads {
			seq := c.FirstSeq + uint64(i)
			if _, ok := m.msgs[c.Source][seq]; !ok && seq > m.trimmed[c.Source] {
				m.msgs[c.Source][seq] = append([]byte{}, p...)
				m.high[c.Source] = max(m.high[c.Source], seq)
			}
		}
	case Trim:
		if m.msgs[c.Source] == nil || c.Through == 0 {
			return
		}
		through := min(c.Through, m.high[c.Source])
		if through <= m.trimmed[c.Source] {
			return
		}
		for seq := range m.msgs[c.Source] {
			if seq <= through {
				delete(m.msgs[c.Source], seq)
			}
		}
		m.trimmed[c.Source] = through
	case Consumed:
		if m.msgs[c.Source] == nil || c.Receiver == "" || c.Seq == 0 {
			return
		}
		if m.receivers[c.Source] == nil {
			m.receivers[c.Source] = map[string]ReceiverPosition{}
		}
		if cur := m.receivers[c.Source][c.Receiver]; c.Seq > cur.Seq {
			cur.Receiver, cur.Seq, cur.UnixNano = c.Receiver, c.Seq, c.UnixNano
			m.receivers[c.Source][c.Receiver] = cur
		}
	}
}

// check compares the repository with the model: every message, the
// bookkeeping derived from the set of held sequence numbers, every
// receiver position, and the member records.
func (m *model) check(t *testing.T, r *Repo) {
	t.Helper()
	m.checkMembers(t, r)
	infos, err := r.Sources()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(m.msgs) {
		t.Fatalf("repository has %d sources, model %d", len(infos), len(m.msgs))
	}
	for _, info := range infos {
		held := m.msgs[info.Name]
		var want SourceInfo
		want.Name = info.Name
		want.HighSeq, want.TrimmedThrough = m.high[info.Name], m.trimmed[info.Name]
		for seq, p := range held {
			want.Count++
			want.Bytes += uint64(len(p))
			if want.LowSeq == 0 || seq < want.LowSeq {
				want.LowSeq = seq
			}
		}
		for seq := want.TrimmedThrough + 1; seq <= want.HighSeq; seq++ {
			if _, ok := held[seq]; ok {
				continue
			}
			if n := len(want.Gaps); n > 0 && want.Gaps[n-1].To == seq-1 {
				want.Gaps[n-1].To = seq
			} else {
				want.Gaps = append(want.Gaps, Range{seq, seq})
			}
		}
		if reg, ok := m.regs[info.Name]; ok {
			want.LastRegisterUnixNano = reg.UnixNano
		}
		want.Session = m.session[info.Name]
		if x, ok := m.expired[info.Name]; ok {
			want.ExpiredSession, want.ExpiredUnixNano = x.Session, x.UnixNano
		}
		want.CreatedUnixNano = m.created[info.Name]
		if !reflect.DeepEqual(info, want) {
			t.Errorf("source %s:\n  got  %+v\n  want %+v", info.Name, info, want)
		}
		msgs, err := r.Read(info.Name, 0, ^uint64(0), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != len(held) {
			t.Errorf("source %s: read %d messages, model holds %d", info.Name, len(msgs), len(held))
		}
		for _, msg := range msgs {
			if string(held[msg.Seq]) != string(msg.Payload) {
				t.Errorf("source %s seq %d: payload differs from the first one published", info.Name, msg.Seq)
			}
		}
		positions, err := r.Receivers(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		wantPositions := []ReceiverPosition{}
		for _, p := range m.receivers[info.Name] {
			wantPositions = append(wantPositions, p)
		}
		slices.SortFunc(wantPositions, func(a, b ReceiverPosition) int { return strings.Compare(a.Receiver, b.Receiver) })
		if !reflect.DeepEqual(positions, wantPositions) {
			t.Errorf("source %s receivers:\n  got  %+v\n  want %+v", info.Name, positions, wantPositions)
		}
		if st, err := r.Pacing(info.Name); err != nil || st.Mode != m.pacing[info.Name] {
			t.Errorf("source %s pacing %v (%v), want %v", info.Name, st.Mode, err, m.pacing[info.Name])
		}
	}
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

			for name, r := range map[string]*Repo{"split": split, "restarted": restarted} {
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

// memLog is a raft log in memory for repositories that index it: entry
// data by index, as Apply saw it.
type memLog map[uint64][]byte

func (m memLog) ReadEntry(index uint64) ([]byte, error) {
	d, ok := m[index]
	if !ok {
		return nil, fmt.Errorf("%w: entry %d not in the test log", ErrCorrupt, index)
	}
	return d, nil
}

func logOfEntries(entries []Entry) memLog {
	m := memLog{}
	for _, e := range entries {
		m[e.Index] = e.Data
	}
	return m
}

func openIndexing(t testing.TB, path string, log LogReader) *Repo {
	t.Helper()
	r, err := Open(path, Options{NoSync: true, InitialMmapSize: 16 << 20, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A repository that indexes the log (log runs) applies the same log to the
// same state as one that copies payloads (inline runs), with the same
// results, in one batch, in random batches, and across restarts that
// replay; its references are a function of the entries alone, so a second
// indexing repository holds exactly the same runs.
func TestDeterministicApplyWithLogRuns(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			log := randomLog(seed, 1500)
			mem := logOfEntries(log)
			inline := openTest(t)
			wantResults := map[uint64]string{}
			resultsByIndex(wantResults, mustApply(t, inline, log))
			want := mustDigest(t, inline)

			whole := openIndexing(t, filepath.Join(t.TempDir(), "whole.db"), mem)
			got := map[uint64]string{}
			resultsByIndex(got, mustApply(t, whole, log))
			if !reflect.DeepEqual(got, wantResults) {
				t.Error("results differ between log runs and inline runs")
			}
			rng := rand.New(rand.NewPCG(seed, 9))
			path := filepath.Join(t.TempDir(), "restarts.db")
			restarted := openIndexing(t, path, mem)
			for i := 0; i < len(log); {
				j := min(len(log), i+1+rng.IntN(30))
				mustApply(t, restarted, log[i:j])
				if rng.IntN(10) == 0 {
					restarted.Close()
					restarted = openIndexing(t, path, mem)
					mustApply(t, restarted, log[max(0, i-rng.IntN(30)):j])
				}
				i = j
			}
			for name, r := range map[string]*Repo{"whole": whole, "restarted": restarted} {
				if d := mustDigest(t, r); d != want {
					t.Errorf("%s: digest %s, want %s", name, d, want)
				}
			}
			if a, b := rawMsgs(t, whole), rawMsgs(t, restarted); !reflect.DeepEqual(a, b) {
				t.Error("two indexing repositories hold different runs for the same log")
			}
			if a, b := rawMsgs(t, whole), rawMsgs(t, inline); reflect.DeepEqual(a, b) {
				t.Error("the indexing repository stored inline runs")
			}
			// Its snapshot carries the payloads: an inline repository
			// restores it without the log.
			copyOf := openTest(t)
			if err := copyOf.Restore(bytes.NewReader(snapshotBytes(t, whole))); err != nil {
				t.Fatal(err)
			}
			if d := mustDigest(t, copyOf); d != want {
				t.Errorf("restored from an indexing repository: digest %s, want %s", d, want)
			}
			if low, _, _ := copyOf.LogRefRange(); low != 0 {
				t.Errorf("a restored repository refers to log entry %d", low)
			}
		})
	}
}

// rawMsgs returns every stored run value by source and key.
func rawMsgs(t *testing.T, r *Repo) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := r.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSources).ForEach(func(name, v []byte) error {
			if v != nil {
				return nil
			}
			return tx.Bucket(bucketSources).Bucket(name).Bucket(bucketMsgs).ForEach(func(k, v []byte) error {
				out[string(name)+"/"+string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
