package clustertest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"umstore/repository"
	"umstore/storegroup"
)

// ErrNotSame is wrapped by the errors of Same and EnsureSame when a group's
// running stores hold different repository state.
var ErrNotSame = errors.New("stores of one group hold different repository state")

// maxDiffs bounds the differences one store's report lists.
const maxDiffs = 5

// Same compares, once, the repositories of every running store of the group
// with the group's leader's (or, without a leader, the first running
// member's): the group identity, every source's bookkeeping (high and low
// sequence numbers, counts, gaps, retention, sessions), the payload of every
// retained message, receiver positions, the records of the other groups,
// and the applied index. It returns nil when all agree, else an error
// wrapping ErrNotSame that names each store that differs and how.
func (c *Cluster) Same(group int) error {
	states, err := c.states(group)
	if err != nil {
		return err
	}
	return describe(group, states)
}

// EnsureSame polls until every running store of the group holds the same
// repository state (see Same), at an applied index at least as high as any
// of them had applied when the call began, which is when the members have
// caught up with each other; or until timeout passes, and then returns what
// still differed. hashicorp/raft's cluster.EnsureSame is the model. It
// never fails the test itself, so a test can also show that stores differ.
//
// A leader acknowledges a Publish a moment before its own repository
// applies it: to check that stores hold a message, wait until one of them
// does (WaitHigh), then call EnsureSame.
func (c *Cluster) EnsureSame(group int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var floor uint64
	for _, m := range c.Members(group) {
		if s := c.Store(m.Name); s != nil {
			floor = max(floor, s.Repository().AppliedIndex())
		}
	}
	for {
		// Polls compare digests only; the detailed comparison (which reads
		// every message) runs once, for the report.
		states, err := c.states(group)
		if err == nil && allEqual(states) && states[0].applied >= floor {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("after %v: %w", timeout, err)
			}
			if err := describe(group, states); err != nil {
				return fmt.Errorf("after %v: %w", timeout, err)
			}
			return nil // converged between the last poll and the report
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitHeld waits until the named store is running and its repository
// holds source up to seq (its high sequence number is seq or more).
func (c *Cluster) WaitHeld(name, source string, seq uint64, timeout time.Duration) {
	c.t.Helper()
	c.Eventually(timeout, fmt.Sprintf("store %s holds %q through %d", name, source, seq), func() bool {
		s := c.Store(name)
		if s == nil {
			return false
		}
		info, ok, err := s.Repository().Source(source)
		return err == nil && ok && info.HighSeq >= seq
	})
}

// RequireSame fails the test unless EnsureSame succeeds.
func (c *Cluster) RequireSame(group int, timeout time.Duration) {
	c.t.Helper()
	if err := c.EnsureSame(group, timeout); err != nil {
		c.t.Fatal(err)
	}
}

// repoState is one store's repository at one moment, as far as polls
// compare it.
type repoState struct {
	name    string
	repo    *repository.Repo
	groupID string
	applied uint64
	digest  string
}

// states reads the state of every running store of the group, the
// reference (the ready leader, else the first running member) first.
func (c *Cluster) states(group int) ([]repoState, error) {
	var running []*storegroup.Store
	for _, m := range c.Members(group) {
		if s := c.Store(m.Name); s != nil {
			if s.IsLeader() {
				running = append([]*storegroup.Store{s}, running...)
			} else {
				running = append(running, s)
			}
		}
	}
	if len(running) == 0 {
		return nil, fmt.Errorf("group %d: no store is running", group)
	}
	out := make([]repoState, 0, len(running))
	for _, s := range running {
		st, err := readState(s.Name(), s.Repository())
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// readState reads a repository's identity, applied index and digest. The
// applied index is read before and after the digest: the digest stands for
// that index only if no batch was applied in between.
func readState(name string, r *repository.Repo) (repoState, error) {
	for range 20 {
		before := r.AppliedIndex()
		id := r.GroupID()
		d, err := r.Digest()
		if err != nil {
			return repoState{}, fmt.Errorf("store %s: %w", name, err)
		}
		if after := r.AppliedIndex(); after == before {
			return repoState{name: name, repo: r, groupID: id, applied: before, digest: d}, nil
		}
	}
	return repoState{}, fmt.Errorf("store %s: still applying entries (applied index %d)", name, r.AppliedIndex())
}

func allEqual(states []repoState) bool {
	for _, st := range states[1:] {
		if st.groupID != states[0].groupID || st.applied != states[0].applied || st.digest != states[0].digest {
			return false
		}
	}
	return true
}

// describe compares every state with the first one in detail.
func describe(group int, states []repoState) error {
	ref := states[0]
	var reports []string
	for _, st := range states[1:] {
		if st.groupID == ref.groupID && st.applied == ref.applied && st.digest == ref.digest {
			continue
		}
		diffs := compareRepos(ref.name, ref.repo, st.name, st.repo)
		if len(diffs) == 0 {
			// The repositories moved on since the poll, or differ in what
			// only the digest covers (the group's creation time).
			if a, b := digestOf(ref.repo), digestOf(st.repo); a != b {
				diffs = []string{fmt.Sprintf("repository digests differ: %s %s, %s %s", ref.name, a, st.name, b)}
			}
		}
		if len(diffs) > 0 {
			reports = append(reports, fmt.Sprintf("%s differs from %s: %s", st.name, ref.name, strings.Join(diffs, ", ")))
		}
	}
	if len(reports) == 0 {
		return nil
	}
	return fmt.Errorf("%w: group %d: %s", ErrNotSame, group, strings.Join(reports, "; "))
}

func digestOf(r *repository.Repo) string {
	d, err := r.Digest()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return d
}

// compareRepos lists how b (store bn) differs from a (store an), at most
// maxDiffs items; none if they hold the same state.
func compareRepos(an string, a *repository.Repo, bn string, b *repository.Repo) []string {
	var diffs []string
	add := func(format string, args ...any) bool {
		if len(diffs) < maxDiffs {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
		return len(diffs) < maxDiffs
	}
	both := func(what string, av, bv any) bool {
		return add("%s: %s has %v, %s has %v", what, an, av, bn, bv)
	}
	if ga, gb := a.GroupID(), b.GroupID(); ga != gb {
		both("group identity", fmt.Sprintf("%q", ga), fmt.Sprintf("%q", gb))
	}
	as, err := a.Sources()
	if err != nil {
		return append(diffs, fmt.Sprintf("store %s: %v", an, err))
	}
	bs, err := b.Sources()
	if err != nil {
		return append(diffs, fmt.Sprintf("store %s: %v", bn, err))
	}
	bByName := map[string]repository.SourceInfo{}
	for _, s := range bs {
		bByName[s.Name] = s
	}
	aByName := map[string]bool{}
	for _, sa := range as {
		aByName[sa.Name] = true
		sb, ok := bByName[sa.Name]
		if !ok {
			if !add("source %q: held by %s only (high %d)", sa.Name, an, sa.HighSeq) {
				return diffs
			}
			continue
		}
		fields := sourceDiffs(sa, sb)
		for _, f := range fields {
			if !both(fmt.Sprintf("source %q: %s", sa.Name, f.name), f.a, f.b) {
				return diffs
			}
		}
		if len(fields) == 0 {
			if d := compareMessages(sa.Name, an, a, bn, b); d != "" && !add("%s", d) {
				return diffs
			}
		}
		ra, erra := a.Receivers(sa.Name)
		rb, errb := b.Receivers(sa.Name)
		if erra == nil && errb == nil && !reflect.DeepEqual(ra, rb) {
			if !both(fmt.Sprintf("source %q: receiver positions", sa.Name), ra, rb) {
				return diffs
			}
		}
	}
	for _, sb := range bs {
		if !aByName[sb.Name] && !add("source %q: held by %s only (high %d)", sb.Name, bn, sb.HighSeq) {
			return diffs
		}
	}
	pa, erra := a.PeerGroupRecords()
	pb, errb := b.PeerGroupRecords()
	if erra == nil && errb == nil && !reflect.DeepEqual(pa, pb) {
		if !both("records of the other groups", pa, pb) {
			return diffs
		}
	}
	if ia, ib := a.AppliedIndex(), b.AppliedIndex(); ia != ib {
		both("applied index", ia, ib)
	}
	return diffs
}

// fieldDiff is one field of SourceInfo that differs.
type fieldDiff struct {
	name string
	a, b any
}

func sourceDiffs(a, b repository.SourceInfo) []fieldDiff {
	var out []fieldDiff
	check := func(name string, av, bv any) {
		if !reflect.DeepEqual(av, bv) {
			out = append(out, fieldDiff{name, av, bv})
		}
	}
	check("high sequence", a.HighSeq, b.HighSeq)
	check("low sequence", a.LowSeq, b.LowSeq)
	check("message count", a.Count, b.Count)
	check("payload bytes", a.Bytes, b.Bytes)
	check("gaps", a.Gaps, b.Gaps)
	check("trimmed through", a.TrimmedThrough, b.TrimmedThrough)
	check("session", a.Session, b.Session)
	check("created", a.CreatedUnixNano, b.CreatedUnixNano)
	check("last registration", a.LastRegisterUnixNano, b.LastRegisterUnixNano)
	check("expired session", a.ExpiredSession, b.ExpiredSession)
	check("expired at", a.ExpiredUnixNano, b.ExpiredUnixNano)
	if len(out) == 0 && !reflect.DeepEqual(a, b) {
		out = append(out, fieldDiff{"info", fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)})
	}
	return out
}

// compareMessages reads a source's retained messages from both
// repositories in pages and describes the first that differs, or "".
func compareMessages(source, an string, a *repository.Repo, bn string, b *repository.Repo) string {
	const page = 512
	from := uint64(1)
	for {
		ma, err := a.Read(source, from, math.MaxUint64, page, 0)
		if err != nil {
			return fmt.Sprintf("store %s: %v", an, err)
		}
		mb, err := b.Read(source, from, math.MaxUint64, page, 0)
		if err != nil {
			return fmt.Sprintf("store %s: %v", bn, err)
		}
		for i := 0; i < len(ma) && i < len(mb); i++ {
			switch x, y := ma[i], mb[i]; {
			case x.Seq < y.Seq:
				return fmt.Sprintf("source %q: message %d held by %s only", source, x.Seq, an)
			case y.Seq < x.Seq:
				return fmt.Sprintf("source %q: message %d held by %s only", source, y.Seq, bn)
			case string(x.Payload) != string(y.Payload):
				return fmt.Sprintf("source %q: message %d: payloads differ (%s: %d bytes %q, %s: %d bytes %q)",
					source, x.Seq, an, len(x.Payload), clip(x.Payload), bn, len(y.Payload), clip(y.Payload))
			}
		}
		switch {
		case len(ma) > len(mb):
			return fmt.Sprintf("source %q: message %d held by %s only", source, ma[len(mb)].Seq, an)
		case len(mb) > len(ma):
			return fmt.Sprintf("source %q: message %d held by %s only", source, mb[len(ma)].Seq, bn)
		case len(ma) < page:
			return ""
		}
		from = ma[len(ma)-1].Seq + 1
	}
}

// clip shortens a payload for a failure message.
func clip(p []byte) string {
	if len(p) > 32 {
		return string(p[:32]) + "..."
	}
	return string(p)
}
