package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Violation is one broken invariant, with the evidence that shows it.
type Violation struct {
	// Rule names the invariant: "rule1" .. "rule4" for SPEC §4, "moved"
	// for a store whose view of its group after a host's replacement is not
	// where its members listen, "receiver" for what a following receiver
	// must see, "durable" for what a durable receiver killed and restarted
	// under its name must see, "redelivery"
	// for a restart that delivered again more than the documented
	// redelivery window, "rpp" for a receiver-paced source released
	// before its paced receiver consumed it, "integrity" for payloads
	// handed to a receiver that are not what the publisher sent, "stranger"
	// for anything a non-member sent that took effect, "session" for a
	// running publisher's source freed for silence, "lock" for a data
	// directory locked while its previous holder still ran, "lifetime"
	// for messages released for age or a receiver forgotten before any
	// could be (checker_clock.go), "liveness" for
	// problems the harness saw (a deployment that did not come back, a
	// daemon that exited by itself, and the like).
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

func (v Violation) String() string { return v.Rule + ": " + v.Detail }

// Result is the checker's verdict on one history.
type Result struct {
	Acknowledged int         `json:"acknowledged"`
	Lost         int         `json:"lost"`
	Delivered    int         `json:"delivered"`
	Violations   []Violation `json:"violations"`
	// LongestStall is the longest time a publisher incarnation went without
	// a new stable range (from its registration on), and StallWhere says
	// which and when. Not a violation: a measure of availability under the
	// faults (publishing should go on while one host is lost or hung).
	LongestStall time.Duration `json:"longest_stall"`
	StallWhere   string        `json:"stall_where,omitempty"`
	// PerKind is, for each kind of fault injected (and "none" for the
	// stalls no fault explains), how many there were, the longest publish
	// stall attributed to them and their restore times (see KindStats).
	PerKind map[string]*KindStats `json:"per_kind"`
	// DurableHanded counts what the durable receivers were handed (every
	// incarnation's, redeliveries included); Redeliveries says, for each
	// restart of one, what it delivered again (see checkDurable).
	DurableHanded int          `json:"durable_handed"`
	Redeliveries  []Redelivery `json:"redeliveries,omitempty"`
	// RPP is what the rpp rule saw of the paced source (nil: none).
	RPP *RPPReport `json:"rpp,omitempty"`
}

// maxExamples bounds how many examples one violation lists.
const maxExamples = 5

// Check verifies every invariant over a finished history. It is pure: the
// same history always gives the same result.
func Check(h *History) Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var res Result
	acks := ackIndex(h.Acks)
	for _, m := range acks {
		res.Acknowledged += len(m)
	}
	for _, ds := range h.Deliveries {
		res.Delivered += len(ds)
	}
	for _, incs := range h.Durable {
		for _, d := range incs {
			res.DurableHanded += len(d.Handed)
		}
	}
	add := func(rule, format string, args ...any) {
		res.Violations = append(res.Violations, Violation{Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	// What retention may have released is not required to be readable or
	// delivered; everything else acknowledged is. A paced source's
	// durable receiver is owed everything its limits keep (it paces the
	// source); the final read and the unnamed follower, which pace
	// nothing, may also find released what a store released after that
	// receiver consumed it (the rpp rule checks each release).
	retained := retainedAcks(h, acks)
	readable := releasedAcks(h, retained)
	res.Lost = checkLoss(h, readable, add)
	checkResume(h, add)
	checkPayloads(h, add)
	checkGroupIDs(h, add)
	checkCatchUp(h, add)
	checkMoved(h, add)
	checkReceiver(h, readable, add)
	res.Redeliveries = checkDurable(h, retained, add)
	res.RPP = checkRPP(h, add)
	checkIntegrity(h, add)
	checkStranger(h, add)
	checkSessions(h, add)
	checkLocks(h, add)
	checkLifetimes(h, add)
	checkExits(h, add)
	checkBackups(h, add)
	checkUnpublished(h, acks, add)
	for _, p := range h.Problems {
		add("liveness", "%s: %s", p.Kind, p.Detail)
	}
	res.LongestStall, res.StallWhere = longestStall(h)
	res.PerKind = kindStats(h)
	return res
}

// retainedFloor is, for a schedule whose stores keep at most n messages of
// each source (--retention-max-messages), the highest sequence number of
// src that retention may have released by the end: High - n, where High is
// the highest any group held (the final read's). A store releases its
// oldest messages until it holds n, and at most n of the numbers it holds
// lie above its own highest minus n, so it keeps every one of them; and no
// group holds anything above High. So an acknowledged message above the
// floor is in every group that committed it, and must be read back and
// handed to the receivers like any other. 0 without a limit.
func retainedFloor(h *History, src string) uint64 {
	if h.Snapshots == nil || h.Snapshots.RetentionMaxMessages == 0 {
		return 0
	}
	f := h.Final[src]
	if f == nil || f.High <= h.Snapshots.RetentionMaxMessages {
		return 0
	}
	return f.High - h.Snapshots.RetentionMaxMessages
}

// retainedAcks is acks without what retention may have released (see
// retainedFloor); acks itself when nothing may have been.
func retainedAcks(h *History, acks map[string]map[uint64]string) map[string]map[uint64]string {
	out := make(map[string]map[uint64]string, len(acks))
	for src, m := range acks {
		floor := retainedFloor(h, src)
		if floor == 0 {
			out[src] = m
			continue
		}
		kept := make(map[uint64]string, len(m))
		for seq, hash := range m {
			if seq > floor {
				kept[seq] = hash
			}
		}
		out[src] = kept
	}
	return out
}

// releasedAcks is retained without, for the paced source, what a store
// showed released (pacedFloor): retained itself without a paced source.
func releasedAcks(h *History, retained map[string]map[uint64]string) map[string]map[uint64]string {
	src := h.RPP.pacedSource()
	floor := pacedFloor(h, src)
	if src == "" || floor == 0 || retained[src] == nil {
		return retained
	}
	out := make(map[string]map[uint64]string, len(retained))
	for s, m := range retained {
		out[s] = m
	}
	kept := make(map[uint64]string, len(retained[src]))
	for seq, hash := range retained[src] {
		if seq > floor {
			kept[seq] = hash
		}
	}
	out[src] = kept
	return out
}

// longestStall finds the longest wait between a publisher incarnation's
// registration or stable report and its next stable report or its end
// (a publisher publishes all the time, so a stable report is due every few
// milliseconds).
func longestStall(h *History) (time.Duration, string) {
	type key struct {
		src string
		inc int
	}
	last := map[key]time.Time{}
	for _, r := range h.Registrations {
		last[key{r.Source, r.Incarnation}] = r.At
	}
	var longest time.Duration
	where := ""
	for _, st := range h.StableTimes {
		k := key{st.Source, st.Incarnation}
		if prev, ok := last[k]; ok && st.At.Sub(prev) > longest {
			longest = st.At.Sub(prev)
			where = fmt.Sprintf("source %s incarnation %d: nothing became stable from %s to %s (then up to %d)", st.Source, st.Incarnation, prev.Format("15:04:05.000"), st.At.Format("15:04:05.000"), st.Last)
		}
		last[k] = st.At
	}
	for _, e := range h.Ends {
		k := key{e.Source, e.Incarnation}
		if prev, ok := last[k]; ok && e.At.Sub(prev) > longest {
			longest = e.At.Sub(prev)
			where = fmt.Sprintf("source %s incarnation %d: nothing became stable from %s until it stopped at %s", e.Source, e.Incarnation, prev.Format("15:04:05.000"), e.At.Format("15:04:05.000"))
		}
	}
	return longest, where
}

type addFunc func(rule, format string, args ...any)

// ackIndex maps source -> seq -> the first acknowledged hash.
func ackIndex(acks []Ack) map[string]map[uint64]string {
	out := map[string]map[uint64]string{}
	for _, a := range acks {
		m := out[a.Source]
		if m == nil {
			m = map[uint64]string{}
			out[a.Source] = m
		}
		if _, ok := m[a.Seq]; !ok {
			m[a.Seq] = a.Hash
		}
	}
	return out
}

func sortedSources[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func sortedSeqs[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// sortedInts lists the keys of m in increasing order.
func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// toRanges compresses sorted sequence numbers into ranges.
func toRanges(seqs []uint64) []Range {
	var out []Range
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].To+1 == s {
			out[n-1].To = s
			continue
		}
		out = append(out, Range{From: s, To: s})
	}
	return out
}

func rangesString(rs []Range) string {
	parts := make([]string, 0, min(len(rs), 20))
	for i, r := range rs {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("... (%d ranges)", len(rs)))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

// checkLoss is rule 1: every acknowledged message is readable at the end.
func checkLoss(h *History, acks map[string]map[uint64]string, add addFunc) int {
	lost := 0
	for _, src := range sortedSources(acks) {
		f := h.Final[src]
		if f == nil {
			add("rule1", "source %s: no final read was made, so %d acknowledged messages are unverified", src, len(acks[src]))
			lost += len(acks[src])
			continue
		}
		if f.Err != "" {
			add("rule1", "source %s: the final read failed: %s", src, f.Err)
		}
		var missing []uint64
		for _, seq := range sortedSeqs(acks[src]) {
			if _, ok := f.Hashes[seq]; !ok {
				missing = append(missing, seq)
			}
		}
		if len(missing) > 0 {
			lost += len(missing)
			add("rule1", "source %s: %d acknowledged messages are not readable from any group after restoration: %s", src, len(missing), rangesString(toRanges(missing)))
		}
	}
	return lost
}

// checkResume is rule 2's resume half: a publisher incarnation must resume
// above every sequence number some earlier incarnation was told was stable.
func checkResume(h *History, add addFunc) {
	regs := slices.Clone(h.Registrations)
	sort.SliceStable(regs, func(i, j int) bool { return regs[i].Event < regs[j].Event })
	for _, r := range regs {
		var high uint64
		highInc := 0
		for _, a := range h.Acks {
			if a.Source == r.Source && a.Event < r.Event && a.Seq > high {
				high, highInc = a.Seq, a.Incarnation
			}
		}
		if high > 0 && r.FirstSeq <= high {
			add("rule2", "source %s: publisher incarnation %d resumed at %d, but incarnation %d had been told %d was stable", r.Source, r.Incarnation, r.FirstSeq, highInc, high)
		}
	}
}

// checkPayloads is rule 2's other half: no sequence number ever carried
// two payloads, whoever saw them (the publisher's acknowledgements, the
// follower's deliveries, the durable receivers', the final read).
func checkPayloads(h *History, add addFunc) {
	type seen struct {
		hash, where string
	}
	bySrc := map[string]map[uint64][]seen{}
	note := func(src string, seq uint64, hash, where string) {
		m := bySrc[src]
		if m == nil {
			m = map[uint64][]seen{}
			bySrc[src] = m
		}
		for _, s := range m[seq] {
			if s.hash == hash {
				return
			}
		}
		m[seq] = append(m[seq], seen{hash, where})
	}
	for _, a := range h.Acks {
		note(a.Source, a.Seq, a.Hash, fmt.Sprintf("acknowledged to incarnation %d", a.Incarnation))
	}
	for _, src := range sortedSources(h.Deliveries) {
		for _, d := range h.Deliveries[src] {
			note(src, d.Seq, d.Hash, fmt.Sprintf("delivered to the follower (payload of incarnation %d)", d.Incarnation))
		}
	}
	for _, src := range sortedSources(h.Durable) {
		for _, d := range h.Durable[src] {
			for _, x := range d.Handed {
				if !x.Missing {
					note(src, x.Seq, x.Hash, fmt.Sprintf("handed to durable receiver incarnation %d (payload of incarnation %d)", d.Incarnation, x.PubInc))
				}
			}
		}
	}
	for _, src := range sortedSources(h.Final) {
		f := h.Final[src]
		for _, seq := range sortedSeqs(f.Hashes) {
			note(src, seq, f.Hashes[seq], fmt.Sprintf("read at the end (payload of incarnation %d)", f.Incs[seq]))
		}
	}
	for _, src := range sortedSources(bySrc) {
		var bad []uint64
		for _, seq := range sortedSeqs(bySrc[src]) {
			if len(bySrc[src][seq]) > 1 {
				bad = append(bad, seq)
			}
		}
		if len(bad) == 0 {
			continue
		}
		var ex []string
		for _, seq := range bad[:min(len(bad), maxExamples)] {
			var ws []string
			for _, s := range bySrc[src][seq] {
				ws = append(ws, s.hash+" "+s.where)
			}
			ex = append(ex, fmt.Sprintf("seq %d: %s", seq, strings.Join(ws, " / ")))
		}
		add("rule2", "source %s: %d sequence numbers carried two payloads (%s); e.g. %s", src, len(bad), rangesString(toRanges(bad)), strings.Join(ex, "; "))
	}
}

// checkReceiver checks what the follower was handed: every sequence number
// once, in order, gaps only where it was told no group held them, no
// acknowledged message among those gaps, and every acknowledged message
// handed over by the end.
func checkReceiver(h *History, acks map[string]map[uint64]string, add addFunc) {
	for _, src := range h.Sources {
		ds := h.Deliveries[src]
		missing := h.FollowMissing[src]
		covered := func(seq uint64) bool {
			for _, r := range missing {
				if r.contains(seq) {
					return true
				}
			}
			return h.unpublishedCovers(src, seq, seq)
		}
		var prev uint64
		var disorder, silent []string
		delivered := map[uint64]bool{}
		for _, d := range ds {
			if d.Seq <= prev {
				disorder = append(disorder, fmt.Sprintf("%d after %d", d.Seq, prev))
			} else {
				for s := prev + 1; s < d.Seq; s++ {
					if !covered(s) {
						silent = append(silent, fmt.Sprintf("%d-%d before %d", s, d.Seq-1, d.Seq))
						break
					}
				}
				prev = d.Seq
			}
			delivered[d.Seq] = true
		}
		if len(disorder) > 0 {
			add("receiver", "source %s: the follower was handed %d messages twice or out of order, e.g. %s", src, len(disorder), strings.Join(disorder[:min(len(disorder), maxExamples)], ", "))
		}
		if len(silent) > 0 {
			add("receiver", "source %s: the follower skipped sequence numbers without being told, e.g. %s", src, strings.Join(silent[:min(len(silent), maxExamples)], ", "))
		}
		var skipped, undelivered []uint64
		for _, seq := range sortedSeqs(acks[src]) {
			if delivered[seq] {
				continue
			}
			if covered(seq) {
				skipped = append(skipped, seq)
			} else {
				undelivered = append(undelivered, seq)
			}
		}
		if len(skipped) > 0 {
			add("receiver", "source %s: the follower was told %d acknowledged messages were held by no group: %s", src, len(skipped), rangesString(toRanges(skipped)))
		}
		if len(undelivered) > 0 {
			add("receiver", "source %s: %d acknowledged messages never reached the follower: %s", src, len(undelivered), rangesString(toRanges(undelivered)))
		}
	}
}
