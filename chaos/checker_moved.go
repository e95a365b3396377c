package main

import (
	"fmt"
	"strings"
	"time"
)

// checkMoved is the rule of replaced hosts ("moved"): once the deployment
// was restored after the last replacement, every store's view of its
// group is where its members listen. The product promises it
// (docs/design.md, "A host replaced at another address"): a moved store
// tells its group, the group's leader records the new addresses in its
// log, and every member, whatever file its host runs with, reaches the
// moved store there; the records travel in snapshot streams, so a member
// that caught up from one knows them too. A stale entry may go unnoticed
// for a long time (a member reaches the others only to vote, to lead, to
// probe or to repair) and surface only at some later fault, which is why
// it is checked where it is made.
//
// For each store whose latest status sample came after that restoration,
// each other member of its group must be reached at its host's current
// address: the address the store's status lists it as moved to, or, if it
// lists it not, the one its host's deployment file gives; a move it lists
// must be recorded in the group's log; and no member may refuse the
// store's own address. Schedules without a replacement are not judged.
func checkMoved(h *History, add addFunc) {
	lastMove, ok := lastReplacementRestored(h)
	if !ok {
		return
	}
	layout := map[string]StoreLayout{}
	for _, s := range h.Layout {
		layout[s.Name] = s
	}
	for _, s := range h.Layout {
		book := h.Books[s.Name]
		if book == nil || book.At.Before(lastMove) {
			continue // not sampled since (its host down at the end): liveness says why
		}
		run, ok := h.hostRunAt(s.Host, book.At)
		if !ok {
			continue
		}
		moved := map[string]movedStatus{}
		for _, m := range book.Moved {
			moved[m.Name] = m
		}
		var wrong []string
		for _, m := range h.Layout {
			if m.Group != s.Group || m.Name == s.Name {
				continue
			}
			now, ok := h.hostRunAt(m.Host, book.At)
			if !ok {
				continue
			}
			want := clientAddr(now.Addr, m.ClientPort)
			got, how := clientAddr(run.FileAddrs[m.Host], m.ClientPort), "its host's file "+run.File
			if mv, listed := moved[m.Name]; listed {
				got, how = mv.ClientAddr, "moved"
				if got == want && !mv.Recorded {
					wrong = append(wrong, fmt.Sprintf("%s at %s, which the group's log does not record (only this store accepted it)", m.Name, got))
					continue
				}
			}
			if got != want {
				wrong = append(wrong, fmt.Sprintf("%s at %s (%s), but it listens at %s (%s)", m.Name, got, how, want, h.hostWhere(m.Host, book.At)))
			}
		}
		where := h.hostWhere(s.Host, book.At)
		if len(wrong) > 0 {
			add("moved", "store %s (%s) reaches %s, in its status at %s, after host %s was replaced", s.Name, where, strings.Join(wrong, "; "), book.At.Format("15:04:05.000"), lastReplacedHost(h))
		}
		if book.MoveRefused != "" {
			add("moved", "store %s (%s): members of its group refuse its address at %s: %s", s.Name, where, book.At.Format("15:04:05.000"), book.MoveRefused)
		}
	}
}

// lastReplacementRestored is when the deployment was restored after the
// last replace-host fault (ok false when there was none, or it never
// was: liveness flags that).
func lastReplacementRestored(h *History) (time.Time, bool) {
	var at time.Time
	found := false
	for _, f := range h.Faults {
		if !replaces(f) {
			continue
		}
		if f.Restored.IsZero() {
			return time.Time{}, false
		}
		found = true
		if f.Restored.After(at) {
			at = f.Restored
		}
	}
	return at, found
}

// lastReplacedHost names the host the last replace-host fault hit.
func lastReplacedHost(h *History) string {
	who := ""
	for _, f := range h.Faults {
		if replaces(f) {
			who = f.Target
		}
	}
	return who
}

// replaces reports whether a fault moved its host to another address: a
// replace-host, or an overlap that replaced one host while the other lost
// power.
func replaces(f FaultRecord) bool {
	return f.Kind == ReplaceHost || f.Kind == Overlap && strings.HasPrefix(f.Note, pairPowerCutReplace)
}
