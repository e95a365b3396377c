package main

import "time"

// TrimObs is what one status sample showed of a source on one store when
// its release point (TrimmedThrough) or its pacing changed, or the first
// time the store showed the source: how far retention had released it,
// the highest sequence number the store held then, and the pacing mode
// the store recorded ("" none).
type TrimObs struct {
	Store          string    `json:"store"`
	Group          int       `json:"group"`
	Host           string    `json:"host"`
	Source         string    `json:"source"`
	TrimmedThrough uint64    `json:"trimmed_through"`
	HighSeq        uint64    `json:"high_seq"`
	Pacing         string    `json:"pacing,omitempty"`
	At             time.Time `json:"at"`
}

// RetentionLog is what the daemons' logs say about retention, per source:
// how many Trims took effect for each reason ("consumed" for a paced
// source's messages its paced receivers consumed, "messages", "bytes",
// "age" for the limits), and how many times a leader began holding a
// paced source's publisher back (blocking RPP at the limit).
type RetentionLog struct {
	Releases map[string]map[string]int `json:"releases,omitempty"`
	HeldBack map[string]int            `json:"held_back,omitempty"`
}

// add sums o into l.
func (l *RetentionLog) add(o RetentionLog) {
	for src, by := range o.Releases {
		for why, n := range by {
			l.release(src, why, n)
		}
	}
	for src, n := range o.HeldBack {
		l.heldBack(src, n)
	}
}

func (l *RetentionLog) release(source, reason string, n int) {
	if l.Releases == nil {
		l.Releases = map[string]map[string]int{}
	}
	if l.Releases[source] == nil {
		l.Releases[source] = map[string]int{}
	}
	l.Releases[source][reason] += n
}

func (l *RetentionLog) heldBack(source string, n int) {
	if l.HeldBack == nil {
		l.HeldBack = map[string]int{}
	}
	l.HeldBack[source] += n
}

// AddRetentionLog records what one host's log said about retention.
func (h *History) AddRetentionLog(l RetentionLog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.RetentionLog.add(l)
}

// observeTrims records the release points a status sample of one store
// showed, when they changed (h.mu held).
func (h *History) observeTrims(host string, st storeStatus, at time.Time) {
	for _, src := range st.Sources {
		key := st.Name + "\x00" + src.Name
		last, ok := h.lastTrim[key]
		if ok && last.TrimmedThrough == src.TrimmedThrough && last.Pacing == src.Pacing {
			continue
		}
		o := TrimObs{Store: st.Name, Group: st.Group, Host: host, Source: src.Name, TrimmedThrough: src.TrimmedThrough, HighSeq: src.HighSeq, Pacing: src.Pacing, At: at}
		h.lastTrim[key] = o
		h.Trims = append(h.Trims, o)
	}
}
