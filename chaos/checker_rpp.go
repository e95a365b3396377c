package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"umstore/receiver"
)

// RPPReport is what the rpp rule saw of the paced source of a schedule,
// and the retention of its other sources beside it: evidence that the
// source ran paced at all (the stores showed its pacing, released it for
// what its receiver consumed, held its publisher back) as well as the
// rule's verdict.
type RPPReport struct {
	Source string `json:"source"`
	Mode   string `json:"mode"`
	// PacedStores counts the stores whose last status sample showed the
	// source paced, Stores those that showed it at all.
	PacedStores int `json:"paced_stores"`
	Stores      int `json:"stores"`
	// Releases counts the releases the rule judged (each rise of a
	// group's release point, as first seen in a status sample of one of
	// its stores); Excused those allowed only because the receiver's hold
	// may have lapsed (see checkRPP).
	Releases int `json:"releases"`
	Excused  int `json:"excused"`
	// TrimmedThrough is, per source, the highest release point a store
	// showed; MaxHeld the most messages a store held at once.
	TrimmedThrough map[string]uint64 `json:"trimmed_through"`
	MaxHeld        map[string]uint64 `json:"max_held"`
	// MaxLag is the furthest an active paced receiver's recorded position
	// was behind the source's newest message, in a store's status.
	MaxLag uint64 `json:"max_lag"`
	// ReleasedBy is, per source and reason, the Trims the leaders logged;
	// HeldBack how many times a leader began holding the paced source's
	// publisher back at the retention limit.
	ReleasedBy map[string]map[string]int `json:"released_by,omitempty"`
	HeldBack   int                       `json:"held_back"`
}

func (r *RPPReport) String() string {
	var others []string
	strangers := 0
	for _, src := range sortedSources(r.TrimmedThrough) {
		if src == r.Source {
			continue
		}
		if strings.HasPrefix(src, floodSourcePrefix) || strings.HasPrefix(src, strangerSourcePrefix) {
			strangers++ // hundreds per flood: counted, not listed
			continue
		}
		others = append(others, fmt.Sprintf("%s released through %d (held at most %d, trims %s)", src, r.TrimmedThrough[src], r.MaxHeld[src], reasonsText(r.ReleasedBy[src])))
	}
	s := fmt.Sprintf("%s %s: paced in %d of %d stores, released through %d (held at most %d, trims %s), publisher held back %d times, receiver lag up to %d; %d releases checked, %d while its hold may have lapsed",
		r.Source, r.Mode, r.PacedStores, r.Stores, r.TrimmedThrough[r.Source], r.MaxHeld[r.Source], reasonsText(r.ReleasedBy[r.Source]), r.HeldBack, r.MaxLag, r.Releases, r.Excused)
	if len(others) > 0 {
		s += "; " + strings.Join(others, "; ")
	}
	if strangers > 0 {
		s += fmt.Sprintf("; %d sources of strangers not listed", strangers)
	}
	return s
}

func reasonsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedSources(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// The margins of the windows in which the paced receiver's hold may have
// lapsed (rppWindows).
var (
	// expirySlack: a leader expires a receiver that has been silent for
	// the activity timeout since it last heard from it, which may be up to
	// one keep-alive (3 s, one tick late) and one call (2 s) before the
	// incarnation was killed: the window opens that much before the kill
	// plus the timeout.
	expirySlack = receiver.DefaultConfig().KeepAliveInterval + receiver.DefaultConfig().AckInterval + ackCallTimeout
	// holdMargin: a registration returns once at least one group
	// answered; a group that did not, or did not hold the source yet, is
	// asked again within 3 s (reregisterEvery, receiver/ackgroup.go), in
	// one call (2 s), and its leader applies the registration within a
	// second.
	holdMargin = 6 * time.Second
)

// visibilitySlack is how late a release its group's leader decided may
// first show in a status sample of one of the group's stores (a sample
// every 200 ms, each bounded by 1 s), with every store of the group up.
const visibilitySlack = 2 * time.Second

// farFuture stands for a window that never closes.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// rppWindows are the spans in which the stores may legitimately have held
// nothing back for the paced source's durable receiver (a superset of the
// real ones, which the harness cannot see exactly): before its first
// registration was on record in every group, and from an activity timeout
// (less expirySlack) after an incarnation ended (killed, exited, closed: a
// receiver that closes keeps its hold until the timeout) until the next
// incarnation's registration was on record. A window that overlaps a host
// or link fault lasts until the deployment was restored after it (a group
// that lost its leader, or a host whose stores were not sampled, shows a
// release its leader decided in the window only then), and every window
// visibilitySlack more.
func rppWindows(h *History, src string, timeout time.Duration) []window {
	incs := h.Durable[src]
	first := farFuture
	for _, d := range incs {
		if !d.Registered.IsZero() {
			first = d.Registered.Add(holdMargin)
			break
		}
	}
	out := []window{{to: first, what: "before its first registration was on record"}}
	for _, d := range incs {
		if d.Ended.IsZero() {
			continue
		}
		from := d.Ended.Add(timeout - expirySlack)
		to, what := farFuture, fmt.Sprintf("incarnation %d %s at %s and none registered again", d.Incarnation, d.How, d.Ended.Format("15:04:05.000"))
		if r, ok := h.durableRegisteredAfter(src, d.Ended); ok {
			to = r.Add(holdMargin)
			what = fmt.Sprintf("incarnation %d %s at %s, the next registered at %s", d.Incarnation, d.How, d.Ended.Format("15:04:05.000"), r.Format("15:04:05.000"))
		}
		if to.After(from) {
			out = append(out, window{from: from, to: to, what: what})
		}
	}
	faults := hostWindows(h)
	for i := range out {
		for changed := true; changed; {
			changed = false
			for _, f := range faults {
				if !f.from.After(out[i].to) && !f.to.Before(out[i].from) && f.to.After(out[i].to) {
					out[i].to, changed = f.to, true
				}
			}
		}
		if out[i].to.Before(farFuture) {
			out[i].to = out[i].to.Add(visibilitySlack)
		}
	}
	return out
}

// handedTimeline returns, for src's durable receiver, the highest sequence
// number handed to any incarnation at or before a moment (messages only:
// a range it was told no group holds is no message it consumed).
func handedTimeline(h *History, src string) func(time.Time) uint64 {
	type point struct {
		at  time.Time
		seq uint64
	}
	var pts []point
	for _, d := range h.Durable[src] {
		for _, x := range d.Handed {
			if !x.Missing {
				pts = append(pts, point{x.At, x.Seq})
			}
		}
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].at.Before(pts[b].at) })
	for k := 1; k < len(pts); k++ {
		pts[k].seq = max(pts[k].seq, pts[k-1].seq)
	}
	return func(t time.Time) uint64 {
		k := sort.Search(len(pts), func(k int) bool { return pts[k].at.After(t) })
		if k == 0 {
			return 0
		}
		return pts[k-1].seq
	}
}

// pacedFloor is the highest release point any store showed for src: for
// the paced source, what the final read and the unnamed follower may find
// released (the rpp rule checks that each release came after the paced
// receiver consumed it, or within the limits while its hold had lapsed).
func pacedFloor(h *History, src string) uint64 {
	var f uint64
	for _, seen := range h.Seen {
		if ss := seen[src]; ss != nil {
			f = max(f, ss.TrimmedThrough)
		}
	}
	return f
}

// checkRPP is the rule of receiver-paced persistence ("rpp"): no store
// released a message of the paced source before its paced receiver (the
// durable receiver child, over all its incarnations) consumed it.
//
// The stores promise (storegroup/retention_paced.go): while a paced
// receiver is active, a blocking paced source releases nothing above the
// lowest position its active paced receivers recorded, whatever the
// limits; a receiver silent for the activity timeout is expired and holds
// nothing until it registers again, and the source is then retained by
// its limits alone.
//
// Each rise of a group's release point is judged where it first shows: at
// the first status sample of any store of the group with TrimmedThrough =
// T above what the group had shown, the receiver must have been handed
// every message up to T by then. Its recorded position only counts what
// it consumed, and the child writes each message down before its handler
// returns it, so what it was handed by the sample bounds what the leader
// could have released when it decided, before the sample; judging where
// the group first shows T keeps a store that catches up later (log
// replay, a wiped store installing a snapshot, which shows the group's
// release point at once) from being judged on a release decided long
// before. A rise beyond that is excused only inside a window in which the
// receiver's hold may have lapsed (rppWindows) and when the limits alone
// could have made it: with --retention-max-messages N, the store held up
// to HighSeq and the leader keeps N messages, so T ≤ HighSeq − N (the
// store applied the release after the messages the leader held when it
// decided). Without a limit no release is excused (none could have been
// made): every release then waited for the receiver.
func checkRPP(h *History, add addFunc) *RPPReport {
	s := h.RPP
	if s == nil {
		return nil
	}
	src := s.Source
	rep := &RPPReport{Source: src, Mode: string(s.Mode), TrimmedThrough: map[string]uint64{}, MaxHeld: map[string]uint64{}, ReleasedBy: h.RetentionLog.Releases, HeldBack: h.RetentionLog.HeldBack[src]}
	for _, seen := range h.Seen {
		for name, ss := range seen {
			rep.TrimmedThrough[name] = max(rep.TrimmedThrough[name], ss.TrimmedThrough)
			rep.MaxHeld[name] = max(rep.MaxHeld[name], ss.MaxCount)
			if name == src {
				rep.Stores++
				if ss.Pacing == string(s.Mode) {
					rep.PacedStores++
				}
				rep.MaxLag = max(rep.MaxLag, ss.PacedLag)
			}
		}
	}
	var limit uint64
	if h.Snapshots != nil {
		limit = h.Snapshots.RetentionMaxMessages
	}
	handedBy := handedTimeline(h, src)
	windows := rppWindows(h, src, s.ActivityTimeout)
	byGroup := map[int][]TrimObs{}
	for _, o := range h.Trims {
		if o.Source == src {
			byGroup[o.Group] = append(byGroup[o.Group], o)
		}
	}
	var bad []string
	for _, g := range sortedInts(byGroup) {
		obs := byGroup[g]
		sort.SliceStable(obs, func(a, b int) bool { return obs[a].At.Before(obs[b].At) })
		var shown uint64
		for _, o := range obs {
			if o.TrimmedThrough <= shown {
				continue
			}
			before := shown
			shown = o.TrimmedThrough
			rep.Releases++
			by := handedBy(o.At)
			if o.TrimmedThrough <= by {
				continue
			}
			lapsed := ""
			for _, w := range windows {
				if w.contains(o.At) {
					lapsed = w.what
					break
				}
			}
			withinLimits := limit > 0 && o.TrimmedThrough+limit <= o.HighSeq || limit == 0 && h.RetentionReleases
			if lapsed != "" && withinLimits {
				rep.Excused++
				continue
			}
			var why string
			switch {
			case lapsed == "":
				why = fmt.Sprintf("its receiver's hold cannot have lapsed (it was registered throughout: no incarnation gone for the receiver activity timeout, %v, less %v)", s.ActivityTimeout, expirySlack)
			case limit > 0:
				why = fmt.Sprintf("its hold may have lapsed (%s), but retention's limits alone release less (the store held up to %d, a limit of %d messages)", lapsed, o.HighSeq, limit)
			default:
				why = fmt.Sprintf("its hold may have lapsed (%s), but no retention limit could release anything in this schedule", lapsed)
			}
			bad = append(bad, fmt.Sprintf("store %s (group %d, host %s) showed it released through %d at %s (its group had shown %d), when the receiver had been handed up to %d: %d messages released before it consumed them; %s",
				o.Store, g, o.Host, o.TrimmedThrough, o.At.Format("15:04:05.000"), before, by, o.TrimmedThrough-by, why))
		}
	}
	if len(bad) > 0 {
		add("rpp", "source %s (receiver-paced, %s): %d releases of messages its paced receiver %s had not consumed, e.g. %s", src, s.Mode, len(bad), durableName(src), strings.Join(bad[:min(len(bad), maxExamples)], "; "))
	}
	return rep
}
