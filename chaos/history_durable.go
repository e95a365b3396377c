package main

import (
	"slices"
	"time"
)

// DurableIncarnation is one incarnation of a source's durable receiver
// child (a named receiver, see receiverChildMain): where its registration
// said it resumed, everything it was handed, and how it ended.
type DurableIncarnation struct {
	Source      string `json:"source"`
	Incarnation int    `json:"incarnation"`
	// Takeover says the incarnation came with a session of its own, not
	// the killed one's: the stores let it in only once they expired the
	// killed session (receiver-activity-timeout).
	Takeover bool      `json:"takeover,omitempty"`
	Started  time.Time `json:"started"`
	// Registered is when its registration completed (zero: it never
	// registered); Resume, Consumed and Groups are what it said
	// (receiver.Registration: 0 resumes at the oldest retained message).
	Registered time.Time `json:"registered,omitzero"`
	Resume     uint64    `json:"resume"`
	Consumed   uint64    `json:"consumed"`
	Groups     string    `json:"groups,omitempty"`
	// Handed is everything it was handed, in the order it was handed.
	Handed []Handed `json:"handed"`
	// Ended is when the harness killed it (the moment of SIGKILL), or when
	// it exited; How says which: "killed", "closed" (a clean stop: Close
	// recorded the position and freed the name) or "exited" (by itself).
	Ended time.Time `json:"ended,omitzero"`
	How   string    `json:"how,omitempty"`
	// Closed is the position it had when it closed cleanly (its
	// Receiver.Consumed): what Close must have recorded.
	Closed uint64 `json:"closed,omitempty"`
	// HeldByAnother lists the groups whose farewell, the receiver said,
	// found the name held by another session (an earlier incarnation the
	// group had not yet expired): such a group keeps that session's record
	// (strong names: receiver-activity-timeout), so Close cannot record
	// there.
	HeldByAnother []int `json:"held_by_another,omitempty"`
}

// Handed is one message a durable receiver was handed (its handler had
// written it down for the harness before it returned, so a message it
// consumed is never missing from here), or a range it was told no group
// holds (Missing, Seq..Through).
type Handed struct {
	Seq     uint64 `json:"seq"`
	Missing bool   `json:"missing,omitempty"`
	Through uint64 `json:"through,omitempty"`
	// Hash, PubInc and Damage are as in Delivery: the payload's hash, the
	// publisher incarnation it names and payloadDamage's verdict on it.
	Hash   string    `json:"hash,omitempty"`
	PubInc int       `json:"pub_inc,omitempty"`
	Damage string    `json:"damage,omitempty"`
	At     time.Time `json:"at"`
}

// last is the highest sequence number h covers.
func (h Handed) last() uint64 {
	if h.Missing {
		return h.Through
	}
	return h.Seq
}

// ReceiverPos is a named receiver's position as one store recorded it,
// seen in a status sample at At (only changes are recorded).
type ReceiverPos struct {
	Store    string    `json:"store"`
	Group    int       `json:"group"`
	Host     string    `json:"host"`
	Source   string    `json:"source"`
	Name     string    `json:"name"`
	Consumed uint64    `json:"consumed"`
	Active   bool      `json:"active"`
	Paced    bool      `json:"paced,omitempty"`
	At       time.Time `json:"at"`
}

// durableName is the name of source's durable receiver.
func durableName(source string) string { return "chaos-" + source }

// durable returns incarnation inc of source's durable receiver, adding it
// if needed (h.mu held).
func (h *History) durable(source string, inc int) *DurableIncarnation {
	for _, d := range h.Durable[source] {
		if d.Incarnation == inc {
			return d
		}
	}
	d := &DurableIncarnation{Source: source, Incarnation: inc}
	h.Durable[source] = append(h.Durable[source], d)
	slices.SortFunc(h.Durable[source], func(a, b *DurableIncarnation) int { return a.Incarnation - b.Incarnation })
	return d
}

// DurableStarted records that an incarnation of source's durable receiver
// was started.
func (h *History) DurableStarted(source string, inc int, takeover bool, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.durable(source, inc)
	d.Started, d.Takeover = at, takeover
}

// DurableRegistered records where an incarnation's registration said it
// resumes.
func (h *History) DurableRegistered(source string, inc int, resume, consumed uint64, groups string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.durable(source, inc)
	d.Registered, d.Resume, d.Consumed, d.Groups = at, resume, consumed, groups
}

// DurableHanded records what an incarnation was handed.
func (h *History) DurableHanded(source string, inc int, x Handed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.durable(source, inc)
	d.Handed = append(d.Handed, x)
}

// DurableEnded records how an incarnation ended (closed: with the position
// it closed at).
func (h *History) DurableEnded(source string, inc int, how string, closed uint64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.durable(source, inc)
	if d.How != "" {
		return // the first word stands: a kill is not an exit
	}
	d.How, d.Ended, d.Closed = how, at, closed
}

// DurableHeld records the groups an incarnation's Close found holding the
// name for another session.
func (h *History) DurableHeld(source string, inc int, groups []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.durable(source, inc).HeldByAnother = groups
}

// DurableProgress says whether the latest incarnation of source's durable
// receiver registered, and the highest sequence number it was handed.
func (h *History) DurableProgress(source string) (inc int, registered bool, last uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ds := h.Durable[source]
	if len(ds) == 0 {
		return 0, false, 0
	}
	d := ds[len(ds)-1]
	for _, x := range d.Handed {
		last = max(last, x.last())
	}
	return d.Incarnation, !d.Registered.IsZero(), last
}

// durableRegisteredAfter is the first registration of source's durable
// receiver at or after t (ok false: none came).
func (h *History) durableRegisteredAfter(source string, t time.Time) (time.Time, bool) {
	var best time.Time
	for _, d := range h.Durable[source] {
		if !d.Registered.IsZero() && !d.Registered.Before(t) && (best.IsZero() || d.Registered.Before(best)) {
			best = d.Registered
		}
	}
	return best, !best.IsZero()
}

// observeReceivers records the named receivers' positions a status sample
// of one store showed, when they changed (h.mu held).
func (h *History) observeReceivers(host string, st storeStatus, at time.Time) {
	h.LastSample[st.Name] = at
	for _, src := range st.Sources {
		for _, r := range src.Receivers {
			key := st.Name + "\x00" + src.Name + "\x00" + r.Name
			last, ok := h.lastReceiverPos[key]
			if ok && last.Consumed == r.Consumed && last.Active == r.Active && last.Paced == r.Paced {
				continue
			}
			p := ReceiverPos{Store: st.Name, Group: st.Group, Host: host, Source: src.Name, Name: r.Name, Consumed: r.Consumed, Active: r.Active, Paced: r.Paced, At: at}
			h.lastReceiverPos[key] = p
			h.ReceiverPositions = append(h.ReceiverPositions, p)
		}
	}
}
