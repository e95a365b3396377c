package storegroup

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/storegroup/clientserver"
	"umstore/storegroup/raftport"
	"umstore/storegroup/stagetime"
)

// storeMetrics holds what a store counts as it works; the rest of its
// metrics are read from Status when scraped.
type storeMetrics struct {
	applyEntries prometheus.Histogram
	applySeconds prometheus.Histogram
	snapshotSecs prometheus.Histogram
	snapshots    atomic.Uint64
	stored       atomic.Uint64
	duplicates   atomic.Uint64
	conflicts    atomic.Uint64
	client       *clientserver.Metrics               // the client server's (connections, refused frames)
	stages       *stagetime.Timer                    // where a Publish's time goes (package stagetime)
	refusedPeers [raftport.NumRefusals]atomic.Uint64 // raft connections, by raftport.Refusal
	leaderMoves  atomic.Uint64                       // leadership handed to the preferred host (leadership.go)
	mismatches   atomic.Uint64                       // sequence numbers another group holds otherwise (repair_verify.go)
	forgotten    atomic.Uint64                       // empty sources this store, leading, had the group forget (activity.go)

	entriesWithheld atomic.Uint64 // raft log entries of this store's not sent: damaged (entrycheck.go)
	entriesRefused  atomic.Uint64 // raft log entries that arrived damaged and were refused (entrycheck.go)
}

func newStoreMetrics(name string, group int) *storeMetrics {
	labels := prometheus.Labels{"store": name, "group": strconv.Itoa(group)}
	return &storeMetrics{
		client: clientserver.NewMetrics(labels),
		stages: stagetime.New(labels),
		applyEntries: prometheus.NewHistogram(prometheus.HistogramOpts{
			ConstLabels: labels,
			Name:        "umstore_apply_batch_entries",
			Help:        "Raft entries applied to the repository in one transaction.",
			Buckets:     prometheus.ExponentialBuckets(1, 2, 11),
		}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			ConstLabels: labels,
			Name:        "umstore_apply_batch_duration_seconds",
			Help:        "Time to apply one batch of raft entries to the repository, fsync included.",
			Buckets:     prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		snapshotSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			ConstLabels: labels,
			Name:        "umstore_snapshot_duration_seconds",
			Help:        "Time to stream one full copy of the repository to a member too far behind for the log (own snapshots only refer to the repository file).",
			Buckets:     prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
}

func (m *storeMetrics) observeApply(entries int, took time.Duration) {
	m.applyEntries.Observe(float64(entries))
	m.applySeconds.Observe(took.Seconds())
}

// Collector returns a Prometheus collector for this store: gauges read
// from its status at scrape time, counters and histograms kept as it works.
// Every metric carries the labels store and group.
func (s *Store) Collector() prometheus.Collector { return &storeCollector{s: s} }

type storeCollector struct{ s *Store }

func (c *storeCollector) desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, extra, prometheus.Labels{"store": c.s.cfg.Name, "group": strconv.Itoa(c.s.cfg.Group)})
}

// Describe sends nothing: the collector is unchecked, as its gauges are
// computed at scrape time.
func (c *storeCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	st := s.Status()
	m := s.metrics
	gauge := func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.desc(name, help), prometheus.GaugeValue, v)
	}
	counter := func(name, help string, v uint64) {
		ch <- prometheus.MustNewConstMetric(c.desc(name, help), prometheus.CounterValue, float64(v))
	}
	for _, state := range []string{"starting", "Follower", "Candidate", "Leader", "Shutdown", "failed"} {
		v := 0.0
		if st.State == state {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc("umstore_raft_state", "1 for the store's current raft state (starting: raft not running yet; failed: stopped itself).", "state"), prometheus.GaugeValue, v, state)
	}
	if r := s.raftNode(); r != nil {
		stats := r.Stats()
		term, _ := strconv.ParseUint(stats["term"], 10, 64)
		gauge("umstore_raft_term", "Current raft term.", float64(term))
		gauge("umstore_raft_commit_index", "Highest log index known committed.", float64(r.CommitIndex()))
		gauge("umstore_raft_applied_index", "Highest log index applied by raft.", float64(r.AppliedIndex()))
		gauge("umstore_raft_last_index", "Highest log index stored.", float64(r.LastIndex()))
	}
	gauge("umstore_repository_applied_index", "Raft index durably applied to the repository.", float64(st.AppliedIndex))
	gauge("umstore_snapshot_index", "Index of the latest local snapshot.", float64(st.SnapshotIndex))
	var msgs, bytes, gaps uint64
	for _, src := range st.Sources {
		msgs += src.Count
		bytes += src.Bytes
		gaps += uint64(src.Gaps)
	}
	gauge("umstore_repository_sources", "Sources the repository holds.", float64(len(st.Sources)))
	gauge("umstore_repository_messages", "Messages the repository holds, all sources.", float64(msgs))
	gauge("umstore_repository_bytes", "Payload bytes the repository holds, all sources.", float64(bytes))
	gauge("umstore_repository_gaps", "Recorded gaps (ranges this group never received), all sources.", float64(gaps))
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge("umstore_catching_up", "1 while the store rejoined empty and has not caught up (its vote is gated).", b2f(st.CatchingUp))
	gauge("umstore_waiting_to_join", "1 while an empty store waits for its turn in the staged restart.", b2f(st.WaitingToJoin))
	gauge("umstore_repair_pending_messages", "Messages the last repair pass found missing.", float64(st.Repair.Pending))
	counter("umstore_sources_forgotten_total", "Sources that never held a message, forgotten through the log once their publisher was freed, by this store while it led.", m.forgotten.Load())
	counter("umstore_repair_passes_total", "Repair passes run as leader.", st.Repair.Passes)
	counter("umstore_repair_messages_total", "Messages copied from other groups.", st.Repair.RepairedMessages)
	counter("umstore_repair_bytes_total", "Payload bytes copied from other groups.", st.Repair.RepairedBytes)
	counter("umstore_messages_corrupt_total", "Stored messages found damaged at rest (the payload fails its checksum), each counted once: never served from this store's files.", st.Repair.Damage.Found)
	counter("umstore_messages_corrupt_healed_total", "Messages damaged at rest now served from an intact copy of another member or group.", st.Repair.Damage.Healed)
	gauge("umstore_messages_corrupt_pending", "Messages damaged at rest without an intact copy yet: missing in this store.", float64(st.Repair.Damage.Pending))
	counter("umstore_copies_corrupt_total", "Messages received from other stores (repair, copies of damaged messages) that failed their checksum and were not used.", st.Repair.Damage.CopiesRefused)
	counter("umstore_consistency_violations_total", "Sequence numbers with two payloads: offered to this group with a payload different from the one held (kept, never overwritten), or found held with another payload by another group (each number counted once; receivers get the lowest group's payload).", m.conflicts.Load())
	gauge("umstore_intergroup_conflicts", "Distinct sequence numbers another group was found to hold with another payload than this group, while this store led (receivers get the payload of the lowest group index).", float64(st.Repair.IntergroupConflicts))
	counter("umstore_leader_moves_total", "Times this store, leading, handed leadership to a member on the group's preferred host.", m.leaderMoves.Load())
	counter("umstore_raft_entries_withheld_total", "Times this store, leading, did not send a raft log entry because its own copy fails the entry's checksums (damaged in its log file or memory).", m.entriesWithheld.Load())
	counter("umstore_raft_entries_refused_total", "Raft log entries that arrived damaged (failing their checksums) and were refused, nothing of them written.", m.entriesRefused.Load())
	counter("umstore_repair_mismatches_total", "Sequence numbers another group holds with a different payload than this group, found by comparing digests of the ranges both hold (a consistency violation).", m.mismatches.Load())
	counter("umstore_messages_stored_total", "Messages newly stored by this store's applies.", m.stored.Load())
	counter("umstore_publish_answered_before_commit_total", "Publish entries this store proposed as leader and answered once their result was decided, before the repository's commit (the rest are answered by raft).", s.proposer.AnsweredEarly())
	counter("umstore_messages_duplicate_total", "Messages applied that were already held (no-ops).", m.duplicates.Load())
	counter("umstore_snapshots_total", "Raft snapshots taken (each refers to the repository file at its applied index).", m.snapshots.Load())
	c.collectClient(ch)
	for r := range raftport.NumRefusals {
		ch <- prometheus.MustNewConstMetric(c.desc("umstore_raft_peers_refused_total", "Connections to the raft port closed before raft read a byte, because the peer did not prove it is a member of this group, by reason.", "reason"), prometheus.CounterValue, float64(m.refusedPeers[r].Load()), r.String())
	}
	c.collectReceivers(ch, st)
	for _, h := range []prometheus.Histogram{m.applyEntries, m.applySeconds, m.snapshotSecs, m.client.MergedFrames} {
		h.Collect(ch)
	}
	m.stages.Collector().Collect(ch)
}

// collectClient adds the client server's counters (clientserver.Metrics):
// open connections, and the frames and connections refused or closed, by
// reason.
func (c *storeCollector) collectClient(ch chan<- prometheus.Metric) {
	m := c.s.metrics.client
	ch <- prometheus.MustNewConstMetric(c.desc("umstore_client_connections", "Open client connections."), prometheus.GaugeValue, float64(m.Connections.Load()))
	for i, name := range clientserver.RefusedReasonNames {
		ch <- prometheus.MustNewConstMetric(c.desc("umstore_client_frames_refused_total", "Client frames refused, by reason.", "reason"), prometheus.CounterValue, float64(m.RefusedFrames[i].Load()), name)
	}
	for i, name := range clientserver.ConnRefusedNames {
		ch <- prometheus.MustNewConstMetric(c.desc("umstore_client_connections_refused_total", "Client connections refused at accept, by the limit they met (ClientLimits).", "reason"), prometheus.CounterValue, float64(m.RefusedConns[i].Load()), name)
	}
	for i, name := range clientserver.ConnClosedNames {
		ch <- prometheus.MustNewConstMetric(c.desc("umstore_client_connections_closed_total", "Client connections the store closed for a time bound: idle (nothing sent for ClientLimits.IdleTimeout) or slow_frame (a frame not whole within ClientLimits.FrameTimeout).", "reason"), prometheus.CounterValue, float64(m.ClosedConns[i].Load()), name)
	}
}
