package main

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// noFault is the key of the stalls that overlap no fault (the baseline).
const noFault = "none"

// KindStats is how the deployment fared under one kind of fault in one
// schedule (or, summed, in a run).
//
// A source's stalls are the gaps between the moments its stable watermark
// advanced (any incarnation's stable report), measured from its first
// registration to the moment the harness asked its last incarnation to
// finish (both ends count as moments): a publisher publishes all the time,
// so a gap longer than a few milliseconds is time in which nothing new
// became stable for that source. A fault is in force from its start until
// the deployment was restored after it (host and link faults: when the
// harness saw every store up and publishing possible again; a publisher
// kill: when the new incarnation registered; a receiver kill stalls only
// the paced source's publisher, until the receiver's next incarnation
// registered). A stall is attributed to a fault in force at some moment of
// it: the kill of the source's own publisher or paced receiver if there
// was one (that explains the stall whatever else was going on, as when
// the kill comes inside a host fault), otherwise the
// earliest-starting host or link fault; to "none" when no fault was in
// force. The whole stall counts, including the time
// after the fault was healed until the source made progress again.
//
// The restore time of a fault runs from its heal (host started again,
// link healed, publisher or receiver restarted, stranger gone) to the
// restoration (for a publisher or receiver kill: the new incarnation's
// registration).
type KindStats struct {
	Count int `json:"count"`
	// LongestStall is the longest stall attributed to a fault of the kind;
	// StallWhere says whose and when.
	LongestStall time.Duration `json:"longest_stall"`
	StallWhere   string        `json:"stall_where,omitempty"`
	// UnpacedStall is the longest such stall of a source that is not
	// receiver-paced: a blocking paced source's publisher is also held
	// back, by design, while its paced receiver is behind (a restart, a
	// receiver kill), which says nothing of the deployment's availability.
	UnpacedStall time.Duration `json:"unpaced_stall"`
	// Restores counts the faults whose restore time was measured,
	// Unrestored those after which no restoration was seen.
	Restores   int           `json:"restores"`
	Unrestored int           `json:"unrestored"`
	RestoreMax time.Duration `json:"restore_max"`
	// RestoreTotal sums the measured restore times (for the mean).
	RestoreTotal time.Duration `json:"restore_total"`
}

// RestoreMean is the mean measured restore time.
func (k *KindStats) RestoreMean() time.Duration {
	if k.Restores == 0 {
		return 0
	}
	return k.RestoreTotal / time.Duration(k.Restores)
}

// add sums o into k.
func (k *KindStats) add(o *KindStats, where string) {
	k.Count += o.Count
	if o.LongestStall > k.LongestStall {
		k.LongestStall, k.StallWhere = o.LongestStall, where+o.StallWhere
	}
	k.UnpacedStall = max(k.UnpacedStall, o.UnpacedStall)
	k.Restores += o.Restores
	k.Unrestored += o.Unrestored
	k.RestoreMax = max(k.RestoreMax, o.RestoreMax)
	k.RestoreTotal += o.RestoreTotal
}

// faultWindow is when fault f was in force, as seen from source (ok false:
// it cannot stall that source).
func faultWindow(h *History, f FaultRecord, source string) (window, bool) {
	w := window{from: f.Start, to: f.End, what: string(f.Kind)}
	if f.Kind == KillReceiver {
		// A receiver that paces no source holds no publisher back; the
		// paced source's receiver does (at the retention limit, blocking
		// RPP), until its next incarnation registers.
		if f.Target != source || !h.RPP.paced(source) {
			return w, false
		}
		if at, ok := h.durableRegisteredAfter(source, f.End); ok {
			w.to = at
		}
		return w, true
	}
	if f.Kind == KillPublisher {
		if f.Target != source {
			return w, false
		}
		if at, ok := registeredAfter(h, source, f.End); ok {
			w.to = at
		}
		return w, true
	}
	if f.Restored.After(w.to) {
		w.to = f.Restored
	}
	return w, true
}

// registeredAfter is the first registration of source at or after t.
func registeredAfter(h *History, source string, t time.Time) (time.Time, bool) {
	var best time.Time
	for _, r := range h.Registrations {
		if r.Source == source && !r.At.Before(t) && (best.IsZero() || r.At.Before(best)) {
			best = r.At
		}
	}
	return best, !best.IsZero()
}

// kindStats computes the per-kind statistics of a history (h.mu held).
func kindStats(h *History) map[string]*KindStats {
	out := map[string]*KindStats{}
	get := func(k string) *KindStats {
		if out[k] == nil {
			out[k] = &KindStats{}
		}
		return out[k]
	}
	for _, f := range h.Faults {
		ks := get(string(f.Kind))
		ks.Count++
		var restored time.Time
		switch f.Kind {
		case KillPublisher:
			restored, _ = registeredAfter(h, f.Target, f.End)
		case KillReceiver:
			restored, _ = h.durableRegisteredAfter(f.Target, f.End)
		default:
			restored = f.Restored
		}
		if restored.IsZero() {
			ks.Unrestored++
			continue
		}
		d := max(restored.Sub(f.End), 0)
		ks.Restores++
		ks.RestoreTotal += d
		ks.RestoreMax = max(ks.RestoreMax, d)
	}
	for _, src := range h.Sources {
		for _, st := range sourceStalls(h, src) {
			key, cause := noFault, ""
			var from time.Time
			own := false // the source's own publisher kill was chosen
			for _, f := range h.Faults {
				w, ok := faultWindow(h, f, src)
				if !ok || !w.from.Before(st.to) || !w.to.After(st.from) {
					continue
				}
				mine := f.Kind == KillPublisher || f.Kind == KillReceiver // faultWindow keeps only the source's own
				if from.IsZero() || mine && !own || mine == own && w.from.Before(from) {
					key, from, own = string(f.Kind), w.from, mine
					cause = fmt.Sprintf(" (%s %s from %s)", f.Kind, f.Target, f.Start.Format("15:04:05.000"))
				}
			}
			ks := get(key)
			if d := st.to.Sub(st.from); !h.RPP.paced(src) && d > ks.UnpacedStall {
				ks.UnpacedStall = d
			}
			if d := st.to.Sub(st.from); d > ks.LongestStall {
				ks.LongestStall = d
				ks.StallWhere = fmt.Sprintf("source %s: nothing newly stable from %s to %s%s", src, st.from.Format("15:04:05.000"), st.to.Format("15:04:05.000"), cause)
			}
		}
	}
	return out
}

// sourceStalls lists a source's stalls: the gaps between consecutive
// moments its stable watermark advanced, from its first registration to
// the harness asking it to finish.
func sourceStalls(h *History, src string) []window {
	start, ok := time.Time{}, false
	for _, r := range h.Registrations {
		if r.Source == src && (!ok || r.At.Before(start)) {
			start, ok = r.At, true
		}
	}
	if !ok {
		return nil
	}
	var times []time.Time
	for _, st := range h.StableTimes {
		if st.Source == src {
			times = append(times, st.At)
		}
	}
	end, ok := h.StopAsked[src]
	if !ok {
		// Cut short: the last thing known of the source.
		end = start
		for _, t := range times {
			end = later(end, t)
		}
		for _, e := range h.Ends {
			if e.Source == src {
				end = later(end, e.At)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	points := []time.Time{start}
	for _, t := range times {
		if t.After(start) && t.Before(end) {
			points = append(points, t)
		}
	}
	points = append(points, end)
	var out []window
	for i := 1; i < len(points); i++ {
		if points[i].After(points[i-1]) {
			out = append(out, window{from: points[i-1], to: points[i]})
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sortedKinds lists the keys of per-kind statistics in the registry's
// order, "none" last.
func sortedKinds[V any](m map[string]V) []string {
	order := map[string]int{}
	for i, k := range allKinds() {
		order[string(k)] = i
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		oi, iok := order[keys[i]]
		oj, jok := order[keys[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return keys[i] < keys[j]
	})
	return keys
}
