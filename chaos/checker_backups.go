package main

import "fmt"

// checkBackups: a store finds its files damaged at start (and moves them
// to a backup, to rejoin empty) only after a corrupt-store fault damaged
// them. Every other fault, a power cut of one host or of both included,
// leaves a store's files as a crash does: what it fsynced is there, what
// it did not may be gone, and neither may make a file unusable: a torn
// bbolt page, a half-written log entry, a repository out of step with its
// log or an unsynced directory entry is a missing sync, not damage a
// store may throw away. A finding is excused by a corrupt-store fault on
// the store's host that started after the store's previous finding (the
// backup took the damaged files away) and before this one.
func checkBackups(h *History, add addFunc) {
	since := map[string]int{} // store -> index of its previous finding in h.Backups, +1
	for i, b := range h.Backups {
		prev := since[b.Store]
		since[b.Store] = i + 1
		excused := false
		for _, f := range h.Faults {
			if f.Kind != CorruptStore || f.Target != b.Host || f.Start.After(b.At) {
				continue
			}
			if prev > 0 && f.Start.Before(h.Backups[prev-1].At) {
				continue
			}
			excused = true
			break
		}
		if !excused {
			add("damage", "store %s (host %s, incarnation %d) found its files damaged at start at %s and moved them to a backup, though no corrupt-store fault had damaged them%s: %s (%s)",
				b.Store, b.Host, b.Incarnation, b.At.Format("15:04:05.000"), lastFaultBefore(h, b.Host, b), b.File, b.Why)
		}
	}
}

// lastFaultBefore names the last host or link fault that hit host before
// the finding b, as ", after KIND from TIME", or "".
func lastFaultBefore(h *History, host string, b StoreBackup) string {
	var last *FaultRecord
	for i, f := range h.Faults {
		s := kindOf(f.Kind)
		if s == nil || s.Target == targetSource || f.Start.After(b.At) {
			continue
		}
		if f.Target != host && s.Target != targetLink {
			continue
		}
		if last == nil || f.Start.After(last.Start) {
			last = &h.Faults[i]
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf(", after %s from %s", last.Kind, last.Start.Format("15:04:05.000"))
}
