package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"umstore/storegroup"
)

// checkStranger is the rule of strangers: nothing a process that is not a
// member sends is ever applied or delivered, and the stores stay up while
// it sends. Its payloads carry strangerMarker and its sources are named
// with strangerSourcePrefix, so the checker recognises them wherever they
// turn up: handed to a receiver, or held by a store (the status samples);
// a store that answered one of its forgeries as accepted, a Trim no leader
// decided (a real source released while retention could release nothing),
// and a daemon that exited or a store that failed while it was sending
// break the rule too.
func checkStranger(h *History, add addFunc) {
	for _, src := range h.Sources {
		n, first := 0, uint64(0)
		for _, d := range h.Deliveries[src] {
			if strings.HasPrefix(d.Damage, damageStranger) {
				if n == 0 {
					first = d.Seq
				}
				n++
			}
		}
		if n > 0 {
			add("stranger", "source %s: the follower was handed %d payloads the stranger sent (the first as seq %d)", src, n, first)
		}
		n = 0
		for _, d := range h.Durable[src] {
			for _, x := range d.Handed {
				if strings.HasPrefix(x.Damage, damageStranger) {
					if n == 0 {
						first = x.Seq
					}
					n++
				}
			}
		}
		if n > 0 {
			add("stranger", "source %s: the durable receiver was handed %d payloads the stranger sent (the first as seq %d)", src, n, first)
		}
		if f := h.Final[src]; f != nil {
			var seqs []uint64
			for _, seq := range sortedSeqs(f.Damaged) {
				if strings.HasPrefix(f.Damaged[seq], damageStranger) {
					seqs = append(seqs, seq)
				}
			}
			if len(seqs) > 0 {
				add("stranger", "source %s: the final read was given %d payloads the stranger sent: %s", src, len(seqs), rangesString(toRanges(seqs)))
			}
		}
	}
	real := map[string]bool{}
	for _, s := range h.Sources {
		real[s] = true
	}
	trimRule := "retention"
	for _, f := range h.Faults {
		if f.Kind == Stranger {
			trimRule = "stranger"
		}
	}
	for _, store := range sortedSources(h.Seen) {
		for _, src := range sortedSources(h.Seen[store]) {
			ss := h.Seen[store][src]
			switch {
			case strings.HasPrefix(src, strangerSourcePrefix):
				add("stranger", "store %s (host %s) holds source %s, which only the stranger published (seen from %s)", store, ss.Host, src, ss.First.Format("15:04:05.000"))
			case real[src] && ss.TrimmedThrough > 0 && !h.RetentionReleases && !h.RPP.paced(src):
				// A paced source is released as its paced receiver
				// consumes, limits or not: the rpp rule judges those.
				add(trimRule, "store %s (host %s) released source %s through %d, but no retention limit could release anything in this schedule: it applied a Trim no leader of its group decided", store, ss.Host, src, ss.TrimmedThrough)
			}
		}
	}
	accepted := map[string][]string{}
	for _, a := range h.StrangerActs {
		if a.Accepted && !previousClientPort(h, a) {
			key := a.Port + " port of " + a.Store
			accepted[key] = append(accepted[key], a.Act)
		}
	}
	for _, key := range sortedSources(accepted) {
		acts := accepted[key]
		add("stranger", "the %s accepted %d forgeries from a process that is not a member, e.g. %s", key, len(acts), strings.Join(uniq(acts)[:min(len(uniq(acts)), maxExamples)], "; "))
	}
	excused := damageFound(h)
	for _, w := range strangerWindows(h) {
		for _, e := range h.Exits {
			if w.contains(e.At) {
				add("stranger", "host %s's daemon (incarnation %d) exited at %s while the stranger was sending (%s): %s", e.Host, e.Incarnation, e.At.Format("15:04:05.000"), w.what, e.Err)
			}
		}
		for i, f := range h.StoreFailures {
			if w.contains(f.At) && !excused[i] {
				add("stranger", "store %s (host %s) failed at %s while the stranger was sending (%s): %s", f.Store, f.Host, f.At.Format("15:04:05.000"), w.what, f.Error)
			}
		}
	}
}

// damageFound marks the store failures that are a corrupt-store fault's
// damage found, not a stranger's doing: the store reported its own files
// damaged (storegroup.ErrFilesMarkedDamaged), and a corrupt-store fault
// had changed that store's files before. Damage in a page apply reads
// only now and then (a source's runs in repo.db, which bbolt does not
// checksum) is found seconds after the fault, whatever runs then. Only a
// store's first such failure after each corrupt-store fault is marked:
// it moves its files aside and rejoins empty, so a second one found no
// damage the fault left.
func damageFound(h *History) map[int]bool {
	marked := map[int]bool{}
	for _, rec := range h.Faults {
		if rec.Kind != CorruptStore {
			continue
		}
		for _, store := range rec.Damaged {
			for i, f := range h.StoreFailures {
				if f.Store == store && f.At.After(rec.Start) && strings.Contains(f.Error, filesMarkedDamaged) && !marked[i] {
					marked[i] = true
					break
				}
			}
		}
	}
	return marked
}

// filesMarkedDamaged is how a store's failure says it found its own files
// damaged: the text of storegroup.ErrFilesMarkedDamaged, which the failure
// wraps (the checker reads it from the store's log).
var filesMarkedDamaged = storegroup.ErrFilesMarkedDamaged.Error()

// checkExits: a host daemon never exits by itself (the harness alone kills
// and stops them); whatever the fault, its stores stop rather than diverge
// but the process that runs them stays. One exception, of the previous
// release's binary (upgrade-host) alone: v0.1.0's daemon exits once every
// store of its host stopped itself, which a full disk does (fixed after it,
// in 6d0338b); its exit during a disk-full fault on its host is that
// release's known behaviour, not the head's, and the fault starts it again
// as its supervisor would (kind_diskfull.go).
func checkExits(h *History, add addFunc) {
	for _, e := range h.Exits {
		if previousExitOnFullDisk(h, e) {
			continue
		}
		add("liveness", "host %s's daemon (incarnation %d) exited by itself at %s: %s", e.Host, e.Incarnation, e.At.Format("15:04:05.000"), e.Err)
	}
}

// window is a span of time a fault was in force, until the deployment was
// restored after it.
type window struct {
	from, to time.Time
	what     string
}

func (w window) contains(t time.Time) bool { return !t.Before(w.from) && !t.After(w.to) }

// strangerWindows are the spans the stranger faults were in force.
func strangerWindows(h *History) []window {
	var out []window
	for _, f := range h.Faults {
		if f.Kind != Stranger {
			continue
		}
		to := f.End
		if f.Restored.After(to) {
			to = f.Restored
		}
		out = append(out, window{from: f.Start, to: to, what: fmt.Sprintf("stranger on host %s from %s", f.Target, f.Start.Format("15:04:05.000"))})
	}
	return out
}

// uniq returns the distinct strings of ss, sorted.
func uniq(ss []string) []string {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// previousExitOnFullDisk reports whether e is the previous release's
// daemon exiting while a disk-full fault filled its host's disk (see
// checkExits).
func previousExitOnFullDisk(h *History, e DaemonExit) bool {
	run, ok := h.hostRunAt(e.Host, e.At)
	if !ok || !run.Previous {
		return false
	}
	for _, f := range h.Faults {
		if f.Kind == DiskFull && f.Target == e.Host && !e.At.Before(f.Start) && (f.End.IsZero() || !e.At.After(f.End)) {
			return true
		}
	}
	return false
}

// previousClientPort reports whether a stranger's act was taken by the
// client port of a store whose host ran the previous release's binary
// then (upgrade-host): the client-port forgeries the head refuses (a
// Publish far past the source's highest, an anonymous Consumed, and the
// other client-trust checks) came after v0.1.0, which accepts them; that
// is the previous release's known behaviour, not the head's. The store
// that took it is the one at the address the act's detail names ("at
// HOST:PORT", where the stranger's client followed a redirect to the
// leader), else the one it was sent to. Its raft port (member
// authentication, in v0.1.0 already) is judged as any other.
func previousClientPort(h *History, a StrangerAct) bool {
	if a.Port != "client" {
		return false
	}
	store := a.Store
	if m := answeredAt.FindStringSubmatch(a.Detail); m != nil {
		for _, s := range h.Layout {
			if strconv.Itoa(s.ClientPort) == m[1] {
				store = s.Name
			}
		}
	}
	for _, s := range h.Layout {
		if s.Name == store {
			run, ok := h.hostRunAt(s.Host, a.At)
			return ok && run.Previous
		}
	}
	return false
}

// answeredAt finds the port of the address a client-port act's detail
// names as the one that answered.
var answeredAt = regexp.MustCompile(`\bat [0-9.]+:([0-9]+)\b`)
