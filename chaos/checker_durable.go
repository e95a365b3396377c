package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"umstore/receiver"
)

// Redelivery is what one restart of a durable receiver delivered again:
// the messages earlier incarnations had been handed that the restarted one
// was handed once more (docs/receivers.md: "at least once", with a bounded
// redelivery window).
type Redelivery struct {
	Source      string `json:"source"`
	Incarnation int    `json:"incarnation"`
	Takeover    bool   `json:"takeover,omitempty"`
	// Resumed is the first sequence number the incarnation was handed,
	// Previous the highest any earlier incarnation was handed.
	Resumed  uint64 `json:"resumed"`
	Previous uint64 `json:"previous"`
	// Count is how many messages it was handed again (0: it resumed one
	// past Previous).
	Count uint64 `json:"count"`
	// Window is how long before its incarnation was killed the first
	// message handed again had been handed (0 when Count is 0), and Bound
	// what the checker allowed for it.
	Window time.Duration `json:"window"`
	Bound  time.Duration `json:"bound"`
	// InFault names the host or link fault in force meanwhile, if any.
	InFault string `json:"in_fault,omitempty"`
}

func (r Redelivery) String() string {
	s := fmt.Sprintf("%s#%d resumed at %d after %d: %d again", r.Source, r.Incarnation, r.Resumed, r.Previous, r.Count)
	if r.Count > 0 {
		s += fmt.Sprintf(" (handed %v before the kill)", r.Window.Round(time.Millisecond))
	}
	return s
}

// The redelivery bound. docs/receivers.md ("What durable guarantees"):
// what a crash redelivers is what the receiver consumed after its last
// recorded acknowledgement, at most one AckInterval of consumption plus
// the time the acknowledgement took to commit, "longer while a leader
// changes, up to the call timeout". A receiver tells each group its
// position every AckInterval, each call bounded by ackCallTimeout
// (receiver/ackgroup.go's callTimeout), and one group that commits is
// enough (the resume takes the latest group's position). While a host or
// link fault is in force a group may be electing a leader (raft's
// heartbeat and election timeouts, 0.5 s each, randomised up to twice) or
// may have lost the receiver's registration (asked again every 3 s):
// leaderChangeAllowance is added then.
const (
	ackCallTimeout        = 2 * time.Second
	leaderChangeAllowance = 5 * time.Second
)

// redeliveryBound is how long before a kill a consumed message may have
// been handed and still be delivered again.
func redeliveryBound(inFault bool) time.Duration {
	b := receiver.DefaultConfig().AckInterval + ackCallTimeout
	if inFault {
		b += leaderChangeAllowance
	}
	return b
}

// hostWindows are the spans the host and link faults were in force, from
// their start until the deployment was restored after them.
func hostWindows(h *History) []window {
	var out []window
	for _, f := range h.Faults {
		if s := kindOf(f.Kind); s == nil || s.Target == targetSource {
			continue
		}
		to := f.End
		if f.Restored.After(to) {
			to = f.Restored
		}
		out = append(out, window{from: f.Start, to: to, what: fmt.Sprintf("%s %s from %s", f.Kind, f.Target, f.Start.Format("15:04:05.000"))})
	}
	return out
}

// overlapping names a window of ws that overlaps [from, to], or "".
func overlapping(ws []window, from, to time.Time) string {
	for _, w := range ws {
		if !w.from.After(to) && !w.to.Before(from) {
			return w.what
		}
	}
	return ""
}

// handedAt is one thing handed to some incarnation, for the checks that
// look across incarnations.
type handedAt struct {
	first, last uint64
	at          time.Time
	inc         int // index into the source's incarnations
}

// checkDurable is the rule of durable receivers: each source's durable
// receiver (killed and restarted under its name) is handed every
// acknowledged message at least once, each incarnation in order with no
// gap but those it was told no group holds; each restart resumes at or
// below one past the highest message earlier incarnations were handed
// (the harness knows everything a receiver consumed: its handler writes a
// message down before it returns it), where its registration said it
// would; no store ever records a position past what the receiver had been
// handed; and a clean Close leaves its last position recorded in every
// group. It returns each restart's redelivery, and flags one that delivers
// again a message consumed longer before the kill than the documented
// bound allows (rule "redelivery").
func checkDurable(h *History, acks map[string]map[uint64]string, add addFunc) []Redelivery {
	var out []Redelivery
	faults := hostWindows(h)
	for _, src := range h.Sources {
		incs := h.Durable[src]
		if len(incs) == 0 {
			continue
		}
		var earlier []handedAt
		var prevMax uint64
		delivered := map[uint64]bool{}
		var missing []Range
		for i, d := range incs {
			checkIncarnationOrder(h, src, d, add)
			for _, x := range d.Handed {
				if x.Missing {
					missing = append(missing, Range{From: x.Seq, To: x.Through})
				} else {
					delivered[x.Seq] = true
				}
			}
			start := uint64(0)
			if len(d.Handed) > 0 {
				start = d.Handed[0].Seq
			}
			if !d.Registered.IsZero() && d.Resume > 0 {
				if start != 0 && start != d.Resume {
					add("durable", "source %s: incarnation %d of its durable receiver registered to resume at %d but was first handed %d (%s)", src, d.Incarnation, d.Resume, start, d.Groups)
				}
				if start == 0 {
					start = d.Resume
				}
			}
			if start == 0 {
				continue // killed before it registered or was handed anything
			}
			if start > prevMax+1 && (d.Resume > 0 || !h.RetentionReleases) {
				skipped := countAcked(acks[src], prevMax+1, start-1)
				add("durable", "source %s: incarnation %d of its durable receiver resumed at %d, but its earlier incarnations had been handed only up to %d: %d-%d skipped (%d of them acknowledged; registration: %s)", src, d.Incarnation, start, prevMax, prevMax+1, start-1, skipped, d.Groups)
			}
			if i > 0 && prevMax > 0 {
				out = append(out, redelivery(h, src, incs, i, start, prevMax, earlier, faults, add))
			}
			for _, x := range d.Handed {
				earlier = append(earlier, handedAt{first: x.Seq, last: x.last(), at: x.At, inc: i})
				prevMax = max(prevMax, x.last())
			}
		}
		checkDurableCoverage(src, acks[src], delivered, missing, add)
		checkRecordedPositions(h, src, incs, add)
	}
	return out
}

// checkIncarnationOrder: one incarnation is handed its messages in order,
// each once, with no gap it was not told about (a range its publisher
// declared never published it passes over silently, by design).
func checkIncarnationOrder(h *History, src string, d *DurableIncarnation, add addFunc) {
	var disorder, silent []string
	var prevEnd uint64
	for j, x := range d.Handed {
		if j > 0 && x.Seq != prevEnd+1 {
			if x.Seq <= prevEnd {
				disorder = append(disorder, fmt.Sprintf("%d after %d", x.Seq, prevEnd))
			} else if !h.unpublishedCovers(src, prevEnd+1, x.Seq-1) {
				silent = append(silent, fmt.Sprintf("%d-%d before %d", prevEnd+1, x.Seq-1, x.Seq))
			}
		}
		prevEnd = max(prevEnd, x.last())
	}
	if len(disorder) > 0 {
		add("durable", "source %s: incarnation %d of its durable receiver was handed %d messages twice or out of order, e.g. %s", src, d.Incarnation, len(disorder), strings.Join(disorder[:min(len(disorder), maxExamples)], ", "))
	}
	if len(silent) > 0 {
		add("durable", "source %s: incarnation %d of its durable receiver skipped sequence numbers without being told, e.g. %s", src, d.Incarnation, strings.Join(silent[:min(len(silent), maxExamples)], ", "))
	}
}

// redelivery measures what incarnation i (resumed at start, after earlier
// incarnations were handed up to prevMax) delivered again, and flags it
// when a message handed again had been consumed longer before its
// incarnation's kill than the bound.
func redelivery(h *History, src string, incs []*DurableIncarnation, i int, start, prevMax uint64, earlier []handedAt, faults []window, add addFunc) Redelivery {
	d := incs[i]
	r := Redelivery{Source: src, Incarnation: d.Incarnation, Takeover: d.Takeover, Resumed: start, Previous: prevMax}
	if start > prevMax {
		return r
	}
	r.Count = prevMax - start + 1
	// The latest earlier handing of the first message handed again: how
	// long its incarnation lived after it.
	for _, x := range slices.Backward(earlier) {
		if x.first <= start && start <= x.last {
			if e := incs[x.inc].Ended; !e.IsZero() {
				r.Window = e.Sub(x.at)
				r.InFault = overlapping(faults, x.at, later(e, d.Registered))
				r.Bound = redeliveryBound(r.InFault != "")
			}
			break
		}
	}
	// Any message handed again that an incarnation had consumed longer
	// before its kill than the bound should have been recorded.
	var worst *handedAt
	var worstBound time.Duration
	for k := range earlier {
		x := &earlier[k]
		e := incs[x.inc].Ended
		if x.last < start || e.IsZero() || incs[x.inc].How == "closed" {
			continue
		}
		fault := overlapping(faults, x.at, later(e, d.Registered))
		b := redeliveryBound(fault != "")
		if e.Sub(x.at) > b && (worst == nil || x.last > worst.last) {
			worst, worstBound = x, b
			if fault != "" {
				r.InFault = fault
			}
		}
	}
	if worst != nil {
		killed := incs[worst.inc]
		add("redelivery", "source %s: incarnation %d of its durable receiver resumed at %d and delivered %d messages again, up to %d, which incarnation %d had been handed at %s, %v before it was killed (bound %v%s): the position its groups recorded lagged what it consumed by more than the documented redelivery window (registration: %s)",
			src, d.Incarnation, start, r.Count, worst.last, killed.Incarnation, worst.at.Format("15:04:05.000"), killed.Ended.Sub(worst.at).Round(time.Millisecond), worstBound, faultNote(r.InFault), d.Groups)
	}
	return r
}

func faultNote(f string) string {
	if f == "" {
		return ""
	}
	return ", " + f + " in force"
}

// countAcked counts the acknowledged sequence numbers in from..to.
func countAcked(acked map[uint64]string, from, to uint64) int {
	n := 0
	for seq := range acked {
		if seq >= from && seq <= to {
			n++
		}
	}
	return n
}

// checkDurableCoverage: every acknowledged message was handed to some
// incarnation, and none was reported as held by no group.
func checkDurableCoverage(src string, acked map[uint64]string, delivered map[uint64]bool, missing []Range, add addFunc) {
	var told, never []uint64
	for _, seq := range sortedSeqs(acked) {
		if delivered[seq] {
			continue
		}
		in := false
		for _, r := range missing {
			in = in || r.contains(seq)
		}
		if in {
			told = append(told, seq)
		} else {
			never = append(never, seq)
		}
	}
	if len(told) > 0 {
		add("durable", "source %s: its durable receiver was told %d acknowledged messages were held by no group: %s", src, len(told), rangesString(toRanges(told)))
	}
	if len(never) > 0 {
		add("durable", "source %s: %d acknowledged messages never reached its durable receiver: %s", src, len(never), rangesString(toRanges(never)))
	}
}

// checkRecordedPositions: no store ever recorded the durable receiver's
// position past what some incarnation had been handed by the time of the
// sample (a position is only recorded for what was consumed), and an
// incarnation that closed cleanly left its last position recorded in
// every group (Close records it synchronously), except a group its Close
// reported holding the name for another session: that group keeps the
// other session's record until it expires it, as the receiver's contract
// says (strong names, receiver-activity-timeout).
func checkRecordedPositions(h *History, src string, incs []*DurableIncarnation, add addFunc) {
	var all []handedAt
	for i, d := range incs {
		for _, x := range d.Handed {
			all = append(all, handedAt{first: x.Seq, last: x.last(), at: x.At, inc: i})
		}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].at.Before(all[b].at) })
	prefix := make([]uint64, len(all))
	for k, x := range all {
		prefix[k] = x.last
		if k > 0 {
			prefix[k] = max(prefix[k], prefix[k-1])
		}
	}
	handedBy := func(t time.Time) uint64 {
		k := sort.Search(len(all), func(k int) bool { return all[k].at.After(t) })
		if k == 0 {
			return 0
		}
		return prefix[k-1]
	}
	name := durableName(src)
	ahead := 0
	var example string
	for _, p := range h.ReceiverPositions {
		if p.Source != src || p.Name != name {
			continue
		}
		if by := handedBy(p.At); p.Consumed > by {
			if ahead == 0 {
				example = fmt.Sprintf("store %s (host %s) recorded %d at %s, when the receiver had been handed up to %d", p.Store, p.Host, p.Consumed, p.At.Format("15:04:05.000"), by)
			}
			ahead++
		}
	}
	if ahead > 0 {
		add("durable", "source %s: %d status samples show its durable receiver's position past what it had been handed (a position recorded for messages it never consumed), e.g. %s", src, ahead, example)
	}
	last := incs[len(incs)-1]
	if last.How != "closed" || last.Closed == 0 {
		return
	}
	// Positions only move forward: a group's highest is its latest. Only
	// groups with a store sampled after the close are judged.
	highest := map[int]uint64{}
	stores := map[int]map[string]uint64{}
	for _, p := range h.ReceiverPositions {
		if p.Source != src || p.Name != name {
			continue
		}
		highest[p.Group] = max(highest[p.Group], p.Consumed)
		if stores[p.Group] == nil {
			stores[p.Group] = map[string]uint64{}
		}
		stores[p.Group][p.Store] = max(stores[p.Group][p.Store], p.Consumed)
	}
	for _, g := range sortedInts(stores) {
		if slices.Contains(last.HeldByAnother, g) {
			continue
		}
		sampled := false
		var seen []string
		for _, st := range sortedSources(stores[g]) {
			sampled = sampled || h.LastSample[st].After(last.Ended)
			seen = append(seen, fmt.Sprintf("%s %d", st, stores[g][st]))
		}
		if sampled && highest[g] < last.Closed {
			add("durable", "source %s: incarnation %d of its durable receiver closed at %d, but the stores of group %d recorded at most %d afterwards (%s): Close did not record the last position", src, last.Incarnation, last.Closed, g, highest[g], strings.Join(seen, ", "))
		}
	}
}
