package main

import (
	"fmt"
	"sync"
	"time"
)

// History is everything one schedule recorded. The recording methods are
// safe for concurrent use; the checker reads it once recording is over.
type History struct {
	mu sync.Mutex

	Schedule int     `json:"schedule"`
	Seed     int64   `json:"seed"`
	Plan     []Fault `json:"plan"`
	Sources  []string
	// Snapshots are the schedule's snapshot settings (nil: umstored's
	// defaults), SnapshotLog what the daemons logged about snapshots.
	Snapshots   *SnapshotSettings `json:"snapshots"`
	SnapshotLog SnapshotLog       `json:"snapshot_log"`
	// RPP says which source is receiver-paced (nil: none), RetentionLog
	// what the daemons logged about retention.
	RPP          *RPPSettings `json:"rpp,omitempty"`
	RetentionLog RetentionLog `json:"retention_log"`

	event         int
	Faults        []FaultRecord         `json:"faults"`
	Registrations []Registration        `json:"registrations"`
	Acks          []Ack                 `json:"acks"`
	StableTimes   []StableTime          `json:"stable_times"`
	Ends          []StableTime          `json:"ends"` // when each publisher incarnation stopped (Last unused)
	Deliveries    map[string][]Delivery `json:"deliveries"`
	FollowMissing map[string][]Range    `json:"follow_missing"`
	Final         map[string]*FinalRead `json:"final"`
	GroupIDs      []GroupIDObs          `json:"group_ids"`
	CatchUps      []CatchUpObs          `json:"catch_ups"`
	Bootstraps    []Bootstrap           `json:"bootstraps"`
	Problems      []Problem             `json:"problems"`
	lastGroupID   map[string]string     // store -> last reported identity

	// StopAsked is when the harness asked each source's last publisher
	// incarnation to finish: the end of the time its stalls are measured in.
	StopAsked map[string]time.Time `json:"stop_asked"`
	// StrangerActs is what the stranger sent and what came back.
	StrangerActs []StrangerAct `json:"stranger_acts,omitempty"`
	// Exits are the host daemons that exited by themselves.
	Exits []DaemonExit `json:"exits,omitempty"`
	// StoreFailures are the stores that reported a failure.
	StoreFailures []StoreFailure    `json:"store_failures,omitempty"`
	lastFailure   map[string]string // store -> last failure recorded
	// Seen is every source the status samples showed on each store:
	// store -> source -> what was seen.
	Seen map[string]map[string]*SourceSeen `json:"seen"`
	// RetentionReleases says whether the stores' retention limits could
	// release any message in this schedule; when they cannot, a store that
	// released messages applied a Trim no leader of its group decided.
	RetentionReleases bool `json:"retention_releases"`
	// Durable is every incarnation of each source's durable receiver
	// child, in incarnation order.
	Durable map[string][]*DurableIncarnation `json:"durable"`
	// ReceiverPositions are the named receivers' positions the status
	// samples showed on each store (changes only).
	ReceiverPositions []ReceiverPos `json:"receiver_positions,omitempty"`
	lastReceiverPos   map[string]ReceiverPos
	// LastSample is when each store's status was last sampled.
	LastSample map[string]time.Time `json:"last_sample"`
	// Trims are the release points the status samples showed on each
	// store, per source (changes only, see TrimObs).
	Trims    []TrimObs `json:"trims,omitempty"`
	lastTrim map[string]TrimObs
	// Layout is the deployment's stores; HostRuns every host daemon
	// incarnation the harness started, where it listened and the file it
	// was given; Books the latest sample of each store's address book
	// (history_hosts.go).
	Layout   []StoreLayout         `json:"layout,omitempty"`
	HostRuns []HostRun             `json:"host_runs,omitempty"`
	Books    map[string]*StoreBook `json:"books,omitempty"`
	// ClockSteps are the steps clock-jump made of the daemons' wall
	// clocks; Lifetimes the age and lifetime limits the daemons ran with
	// (nil: none); Expiries the sources the leaders freed, Forgotten the
	// receivers they forgot and Locks the data directories the stores
	// locked, from the daemons' logs (history_clock.go).
	ClockSteps []ClockStep         `json:"clock_steps,omitempty"`
	Lifetimes  *LifetimeLimits     `json:"lifetimes,omitempty"`
	Expiries   []SessionExpiry     `json:"session_expiries,omitempty"`
	Forgotten  []ReceiverForgotten `json:"forgotten_receivers,omitempty"`
	Locks      []LockTaken         `json:"locks,omitempty"`
	// Backups are the stores that found their files damaged at start and
	// moved them to a backup, from the daemons' logs (history_backups.go).
	Backups []StoreBackup `json:"backups,omitempty"`
	// Unpublished are the ranges the publishers declared never published
	// (history_unpublished.go): a receiver passes over them silently.
	Unpublished []Unpublished `json:"unpublished,omitempty"`
}

// NewHistory returns an empty history for one schedule.
func NewHistory(schedule int, seed int64, sources []string) *History {
	return &History{
		Schedule:        schedule,
		Seed:            seed,
		Sources:         sources,
		Deliveries:      map[string][]Delivery{},
		FollowMissing:   map[string][]Range{},
		Final:           map[string]*FinalRead{},
		lastGroupID:     map[string]string{},
		StopAsked:       map[string]time.Time{},
		lastFailure:     map[string]string{},
		Seen:            map[string]map[string]*SourceSeen{},
		Durable:         map[string][]*DurableIncarnation{},
		lastReceiverPos: map[string]ReceiverPos{},
		LastSample:      map[string]time.Time{},
		lastTrim:        map[string]TrimObs{},
	}
}

func (h *History) nextEvent() int {
	h.event++
	return h.event
}

// Fault records an injected fault and returns its index in Faults.
func (h *History) Fault(f FaultRecord) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Faults = append(h.Faults, f)
	return len(h.Faults) - 1
}

// FaultRestored records when the deployment was seen whole again after
// fault i.
func (h *History) FaultRestored(i int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= 0 && i < len(h.Faults) {
		h.Faults[i].Restored = at
	}
}

// Registered records a publisher incarnation's resume point and session.
func (h *History) Registered(source string, inc int, firstSeq uint64, session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Registrations = append(h.Registrations, Registration{Source: source, Incarnation: inc, FirstSeq: firstSeq, Session: session, Event: h.nextEvent(), At: time.Now()})
}

// Stable records that the publisher reported first..last stable, with the
// payload hash of each.
func (h *History) Stable(source string, inc int, first, last uint64, hashes []string) error {
	if last < first || uint64(len(hashes)) != last-first+1 {
		return fmt.Errorf("stable range %d-%d of %s came with %d hashes", first, last, source, len(hashes))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ev := h.nextEvent()
	h.StableTimes = append(h.StableTimes, StableTime{Source: source, Incarnation: inc, Last: last, At: time.Now()})
	for i, hash := range hashes {
		h.Acks = append(h.Acks, Ack{Source: source, Seq: first + uint64(i), Hash: hash, Incarnation: inc, Event: ev})
	}
	return nil
}

// Ended records that a publisher incarnation stopped (killed, or exited).
func (h *History) Ended(source string, inc int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Ends = append(h.Ends, StableTime{Source: source, Incarnation: inc, At: time.Now()})
}

// Delivered records a message handed to a following receiver.
func (h *History) Delivered(source string, seq uint64, payload []byte) {
	d := Delivery{Seq: seq, Hash: payloadHash(payload), Damage: payloadDamage(source, seq, payload)}
	if p, ok := parsePayload(payload); ok {
		d.Incarnation = p.Incarnation
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Deliveries[source] = append(h.Deliveries[source], d)
}

// Missed records a range a following receiver was told no group holds.
func (h *History) Missed(source string, r Range) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.FollowMissing[source] = append(h.FollowMissing[source], r)
}

// SetFinal records the final read of a source.
func (h *History) SetFinal(source string, f *FinalRead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Final[source] = f
}

// ObserveGroupID records a store's reported group identity if it changed.
func (h *History) ObserveGroupID(host, store string, group int, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if last, ok := h.lastGroupID[store]; ok && last == id {
		return
	}
	h.lastGroupID[store] = id
	h.GroupIDs = append(h.GroupIDs, GroupIDObs{Host: host, Store: store, Group: group, GroupID: id, At: time.Now()})
}

// ObserveCatchUp records stores of one group catching up together.
func (h *History) ObserveCatchUp(o CatchUpObs) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.CatchUps = append(h.CatchUps, o)
}

// AddBootstraps records bootstrap and identity events found in the logs.
func (h *History) AddBootstraps(b []Bootstrap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Bootstraps = append(h.Bootstraps, b...)
}

// AddSnapshotLog records what one host's log said about snapshots.
func (h *History) AddSnapshotLog(l SnapshotLog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.SnapshotLog.add(l)
}

// Stopping records that the harness asked source's publisher to finish.
func (h *History) Stopping(source string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.StopAsked[source] = time.Now()
}

// Stranger records one thing the stranger sent.
func (h *History) Stranger(a StrangerAct) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.StrangerActs = append(h.StrangerActs, a)
}

// DaemonExited records a host daemon that exited by itself.
func (h *History) DaemonExited(host string, inc int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := "exit status 0"
	if err != nil {
		msg = err.Error()
	}
	h.Exits = append(h.Exits, DaemonExit{Host: host, Incarnation: inc, At: time.Now(), Err: msg})
}

// ObserveStore records what one status sample showed of a store: a
// failure (when it changed) and the sources it holds.
func (h *History) ObserveStore(host string, st storeStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeStoreAt(host, st, time.Now())
}

// observeStoreAt is ObserveStore for a sample taken at now (h.mu held).
func (h *History) observeStoreAt(host string, st storeStatus, now time.Time) {
	failure := st.Error
	if failure == "" && st.State == "failed" {
		failure = "state failed"
	}
	if failure != h.lastFailure[st.Name] {
		h.lastFailure[st.Name] = failure
		if failure != "" {
			h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: host, Store: st.Name, At: now, Error: failure})
		}
	}
	seen := h.Seen[st.Name]
	if seen == nil {
		seen = map[string]*SourceSeen{}
		h.Seen[st.Name] = seen
	}
	for _, src := range st.Sources {
		ss := seen[src.Name]
		if ss == nil {
			ss = &SourceSeen{Host: host, First: now}
			seen[src.Name] = ss
		}
		ss.TrimmedThrough = max(ss.TrimmedThrough, src.TrimmedThrough)
		ss.MaxCount = max(ss.MaxCount, src.Count)
		ss.Pacing = src.Pacing
		for _, r := range src.Receivers {
			if r.Paced && r.Active {
				ss.PacedLag = max(ss.PacedLag, r.Lag)
			}
		}
	}
	h.observeReceivers(host, st, now)
	h.observeTrims(host, st, now)
	h.observeBook(host, st, now)
}

// Problemf records a problem the harness saw.
func (h *History) Problemf(kind, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Problems = append(h.Problems, Problem{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// MaxAcked returns the highest sequence number acknowledged for source.
func (h *History) MaxAcked(source string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m uint64
	for _, a := range h.Acks {
		if a.Source == source {
			m = max(m, a.Seq)
		}
	}
	return m
}

// LastDelivered returns the highest sequence number the follower of source
// has been handed or told is missing.
func (h *History) LastDelivered(source string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m uint64
	if ds := h.Deliveries[source]; len(ds) > 0 {
		m = ds[len(ds)-1].Seq
	}
	for _, r := range h.FollowMissing[source] {
		m = max(m, r.To)
	}
	return m
}

// AckCount returns how many acknowledgements were recorded.
func (h *History) AckCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.Acks)
}
