package main

import (
	"fmt"
	"time"
)

// Range is an inclusive range of sequence numbers.
type Range struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

func (r Range) String() string {
	if r.From == r.To {
		return fmt.Sprint(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// contains reports whether seq lies in r.
func (r Range) contains(seq uint64) bool { return seq >= r.From && seq <= r.To }

// FaultRecord is one fault as it was injected.
type FaultRecord struct {
	Kind   FaultKind `json:"kind"`
	Target string    `json:"target"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	// Restored is when the harness saw the deployment whole again after a
	// host or link fault (zero for a publisher kill, and when it never was).
	Restored time.Time `json:"restored,omitzero"`
	Note     string    `json:"note,omitempty"`
	// Damaged names the stores whose files a corrupt-store fault changed.
	Damaged []string `json:"damaged,omitempty"`
}

// Registration is one publisher incarnation's registration: where it
// resumed, and the session it registered with (publisher.Session, which
// the stores name when they free its source). Event orders it against the
// acknowledgements.
type Registration struct {
	Source      string    `json:"source"`
	Incarnation int       `json:"incarnation"`
	FirstSeq    uint64    `json:"first_seq"`
	Session     string    `json:"session,omitempty"`
	Event       int       `json:"event"`
	At          time.Time `json:"at"`
}

// Ack is one message the publisher reported stable.
type Ack struct {
	Source      string `json:"source"`
	Seq         uint64 `json:"seq"`
	Hash        string `json:"hash"`
	Incarnation int    `json:"incarnation"`
	Event       int    `json:"event"`
}

// StableTime is when a publisher incarnation reported a stable range.
type StableTime struct {
	Source      string    `json:"source"`
	Incarnation int       `json:"incarnation"`
	Last        uint64    `json:"last"`
	At          time.Time `json:"at"`
}

// Delivery is one message a following receiver was handed.
type Delivery struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	// Incarnation is the publisher incarnation named in the payload (0 if
	// the payload was not one of ours).
	Incarnation int `json:"incarnation"`
	// Damage is payloadDamage's verdict on the payload: "" when it is
	// exactly what a publisher sent for this sequence number.
	Damage string `json:"damage,omitempty"`
}

// FinalRead is what the last read of 1..High found for one source, once
// everything was healed.
type FinalRead struct {
	High   uint64            `json:"high"`
	Hashes map[uint64]string `json:"-"`
	Incs   map[uint64]int    `json:"-"`
	// Damaged holds payloadDamage's verdict on every payload read that is
	// not exactly what a publisher sent for its sequence number.
	Damaged map[uint64]string `json:"damaged,omitempty"`
	Missing []Range           `json:"missing,omitempty"`
	Err     string            `json:"err,omitempty"`
}

// GroupIDObs records that a store reported a group identity (only changes
// are recorded, including to and from empty).
type GroupIDObs struct {
	Host    string    `json:"host"`
	Store   string    `json:"store"`
	Group   int       `json:"group"`
	GroupID string    `json:"group_id"`
	At      time.Time `json:"at"`
}

// CatchUpObs records the empty stores of one group catching up together on
// one host, seen in a status sample ("status") or reconstructed from the
// daemon's log ("log").
type CatchUpObs struct {
	Host   string    `json:"host"`
	Group  int       `json:"group"`
	Stores []string  `json:"stores"`
	Via    string    `json:"via"`
	At     time.Time `json:"at"`
}

// Bootstrap is a store bootstrapping a brand-new group, or a leader
// creating a group identity, as the daemon logged it.
type Bootstrap struct {
	Host        string `json:"host"`
	Incarnation int    `json:"incarnation"`
	Store       string `json:"store"`
	Group       int    `json:"group"`
	// Kind is "bootstrap" (raft BootstrapCluster) or "identity" (InitGroup).
	Kind    string `json:"kind"`
	GroupID string `json:"group_id,omitempty"`
}

// StrangerAct is one thing the stranger sent to a store, and what came
// back.
type StrangerAct struct {
	At    time.Time `json:"at"`
	Store string    `json:"store"`
	// Port is "raft" or "client".
	Port string `json:"port"`
	// Act says what was sent, e.g. "AppendEntries (same term) with Publish".
	Act string `json:"act"`
	// Accepted says the store took it: a forged AppendEntries answered
	// with success and the stranger's entries in the store's log and
	// committed, a Publish answered with an Ack.
	Accepted bool   `json:"accepted,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// DaemonExit is a host daemon that exited by itself (not killed or stopped
// by the harness).
type DaemonExit struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	At          time.Time `json:"at"`
	Err         string    `json:"err"`
}

// StoreFailure is a store that reported an error or the state "failed" in
// its host's /v1/status (recorded when it changes).
type StoreFailure struct {
	Host  string    `json:"host"`
	Store string    `json:"store"`
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// SourceSeen is what the status samples showed of one source on one store:
// it was there, and retention had released it up to TrimmedThrough (the
// highest seen); MaxCount is the most messages the store held of it at
// once, Pacing the last pacing mode it showed ("" none), and PacedLag the
// longest way an active paced receiver's recorded position was behind the
// source's newest message.
type SourceSeen struct {
	Host           string    `json:"host"`
	First          time.Time `json:"first"`
	TrimmedThrough uint64    `json:"trimmed_through,omitempty"`
	MaxCount       uint64    `json:"max_count,omitempty"`
	Pacing         string    `json:"pacing,omitempty"`
	PacedLag       uint64    `json:"paced_lag,omitempty"`
}

// Problem is something the harness saw go wrong that is not one of the
// recorded facts above: a deployment that did not come back, a publisher
// that could not register, a receiver that never caught up.
type Problem struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}
