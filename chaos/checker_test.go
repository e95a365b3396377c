package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// healthy builds a synthetic history of one source in which the publisher
// acknowledged 1..n, the follower was handed 1..n and the final read found
// 1..n, all with incarnation 1's payloads: every check passes on it.
func healthy(n uint64) *History {
	h := NewHistory(0, 1, []string{"s1"})
	h.Registered("s1", 1, 1, "pub-s1#1")
	var hashes []string
	final := &FinalRead{High: n, Hashes: map[uint64]string{}, Incs: map[uint64]int{}}
	for seq := uint64(1); seq <= n; seq++ {
		p := makePayload("s1", seq, 1, 64)
		hashes = append(hashes, payloadHash(p))
		h.Delivered("s1", seq, p)
		final.Hashes[seq], final.Incs[seq] = payloadHash(p), 1
	}
	if err := h.Stable("s1", 1, 1, n, hashes); err != nil {
		panic(err)
	}
	h.SetFinal("s1", final)
	for _, s := range []struct {
		host, name string
		group      int
	}{{"A", "G1S1", 1}, {"A", "G1S2", 1}, {"B", "G1S3", 1}, {"A", "G2S1", 2}, {"B", "G2S2", 2}, {"B", "G2S3", 2}} {
		h.ObserveGroupID(s.host, s.name, s.group, "")
		h.ObserveGroupID(s.host, s.name, s.group, map[int]string{1: "id-one", 2: "id-two"}[s.group])
	}
	h.AddBootstraps([]Bootstrap{
		{Host: "A", Incarnation: 1, Store: "G1S1", Group: 1, Kind: "bootstrap"},
		{Host: "A", Incarnation: 1, Store: "G2S1", Group: 2, Kind: "bootstrap"},
		{Host: "A", Incarnation: 1, Store: "G1S1", Group: 1, Kind: "identity", GroupID: "id-one"},
		{Host: "B", Incarnation: 1, Store: "G2S2", Group: 2, Kind: "identity", GroupID: "id-two"},
	})
	return h
}

// restartPublisher appends a second incarnation that resumed at first and
// had first..last acknowledged, delivered and read back.
func restartPublisher(h *History, first, last uint64) {
	h.Registered("s1", 2, first, "pub-s1#2")
	var hashes []string
	for seq := first; seq <= last; seq++ {
		p := makePayload("s1", seq, 2, 64)
		hashes = append(hashes, payloadHash(p))
		h.Delivered("s1", seq, p)
		h.Final["s1"].Hashes[seq], h.Final["s1"].Incs[seq] = payloadHash(p), 2
	}
	if err := h.Stable("s1", 2, first, last, hashes); err != nil {
		panic(err)
	}
	h.Final["s1"].High = max(h.Final["s1"].High, last)
}

func TestCheckFlagsEachBrokenInvariant(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History)
		rule   string // the rule that must be flagged; "" = none
		want   string // text the violation must contain
		lost   int
	}{
		{name: "healthy", mutate: func(h *History) {}},
		{name: "healthy restart", mutate: func(h *History) { restartPublisher(h, 11, 20) }},
		{
			name:   "lost acknowledged message",
			mutate: func(h *History) { delete(h.Final["s1"].Hashes, 4); delete(h.Final["s1"].Hashes, 5) },
			rule:   "rule1", want: "2 acknowledged messages are not readable", lost: 2,
		},
		{
			name: "retention released acknowledged messages below its floor",
			mutate: func(h *History) {
				h.Snapshots = &SnapshotSettings{RetentionMaxMessages: 4} // floor 10-4 = 6
				for seq := uint64(1); seq <= 6; seq++ {
					delete(h.Final["s1"].Hashes, seq)
				}
			},
		},
		{
			name: "acknowledged message lost above retention's floor",
			mutate: func(h *History) {
				h.Snapshots = &SnapshotSettings{RetentionMaxMessages: 4}
				delete(h.Final["s1"].Hashes, 6)
				delete(h.Final["s1"].Hashes, 7)
			},
			rule: "rule1", want: "1 acknowledged messages are not readable from any group after restoration: 7", lost: 1,
		},
		{
			name:   "final read missing entirely",
			mutate: func(h *History) { delete(h.Final, "s1") },
			rule:   "rule1", want: "no final read", lost: 10,
		},
		{
			name:   "final read failed",
			mutate: func(h *History) { h.Final["s1"].Err = "no store group reachable" },
			rule:   "rule1", want: "final read failed",
		},
		{
			name:   "resumed at a stable sequence number",
			mutate: func(h *History) { restartPublisher(h, 10, 20) },
			rule:   "rule2", want: "resumed at 10",
		},
		{
			name:   "resumed below a stable sequence number",
			mutate: func(h *History) { restartPublisher(h, 3, 20) },
			rule:   "rule2", want: "had been told 10 was stable",
		},
		{
			name: "sequence number read back with another payload",
			mutate: func(h *History) {
				h.Final["s1"].Hashes[7] = payloadHash(makePayload("s1", 7, 2, 64))
			},
			rule: "rule2", want: "carried two payloads",
		},
		{
			name: "follower handed another payload",
			mutate: func(h *History) {
				h.Deliveries["s1"][2] = Delivery{Seq: 3, Hash: "0000", Incarnation: 3}
			},
			rule: "rule2", want: "seq 3",
		},
		{
			name: "group identity changed",
			mutate: func(h *History) {
				h.ObserveGroupID("A", "G1S1", 1, "")
				h.ObserveGroupID("A", "G1S1", 1, "id-new")
			},
			rule: "rule3", want: "changed its group identity",
		},
		{
			name:   "stores of a group disagree",
			mutate: func(h *History) { h.GroupIDs[len(h.GroupIDs)-1].GroupID = "id-other" },
			rule:   "rule3", want: "two identities",
		},
		{
			name: "group bootstrapped twice",
			mutate: func(h *History) {
				h.AddBootstraps([]Bootstrap{{Host: "A", Incarnation: 3, Store: "G1S1", Group: 1, Kind: "bootstrap"}})
			},
			rule: "rule3", want: "bootstrapped 2 times",
		},
		{
			name: "group identity created twice",
			mutate: func(h *History) {
				h.AddBootstraps([]Bootstrap{{Host: "A", Incarnation: 2, Store: "G1S2", Group: 1, Kind: "identity", GroupID: "id-one"}})
			},
			rule: "rule3", want: "given an identity 2 times",
		},
		{
			name: "two empty stores of a group catching up",
			mutate: func(h *History) {
				h.ObserveCatchUp(CatchUpObs{Host: "A", Group: 1, Stores: []string{"G1S1", "G1S2"}, Via: "status", At: time.Now()})
			},
			rule: "rule4", want: "2 empty stores of group 1",
		},
		{
			name: "one empty store catching up is fine",
			mutate: func(h *History) {
				h.ObserveCatchUp(CatchUpObs{Host: "A", Group: 1, Stores: []string{"G1S1"}, Via: "status"})
			},
		},
		{
			name: "follower handed a message twice",
			mutate: func(h *History) {
				h.Deliveries["s1"] = append(h.Deliveries["s1"], h.Deliveries["s1"][9])
			},
			rule: "receiver", want: "twice or out of order",
		},
		{
			name:   "follower skipped silently",
			mutate: func(h *History) { h.Deliveries["s1"] = append(h.Deliveries["s1"][:4:4], h.Deliveries["s1"][6:]...) },
			rule:   "receiver", want: "without being told",
		},
		{
			name: "follower told an acknowledged message was missing",
			mutate: func(h *History) {
				h.Deliveries["s1"] = append(h.Deliveries["s1"][:4:4], h.Deliveries["s1"][6:]...)
				h.Missed("s1", Range{From: 5, To: 6})
			},
			rule: "receiver", want: "were held by no group: 5-6",
		},
		{
			name: "unacknowledged gap reported to the follower is fine",
			mutate: func(h *History) {
				p := makePayload("s1", 13, 1, 64)
				h.Missed("s1", Range{From: 11, To: 12})
				h.Delivered("s1", 13, p)
				h.Final["s1"].Hashes[13] = payloadHash(p)
				h.Final["s1"].Incs[13] = 1
			},
		},
		{
			name:   "follower never got there",
			mutate: func(h *History) { h.Deliveries["s1"] = h.Deliveries["s1"][:8] },
			rule:   "receiver", want: "never reached the follower: 9-10",
		},
		{
			name: "follower handed a damaged payload",
			mutate: func(h *History) {
				h.Deliveries["s1"][4] = deliveryOf("s1", 5, flipped(makePayload("s1", 5, 1, 64), 40, 3))
			},
			rule: "integrity", want: "seq 5 (checksum",
		},
		{
			name: "follower handed a damaged payload never acknowledged",
			mutate: func(h *History) {
				p := flipped(makePayload("s1", 11, 1, 64), 62, 0) // in the padding
				h.Delivered("s1", 11, p)
			},
			rule: "integrity", want: "seq 11 (checksum",
		},
		{
			name: "follower handed a damaged header",
			mutate: func(h *History) {
				h.Delivered("s1", 11, flipped(makePayload("s1", 11, 1, 64), 27, 1)) // inc=1 becomes inc=3
			},
			rule: "integrity", want: "seq 11 (checksum",
		},
		{
			name: "follower handed another message's intact payload",
			mutate: func(h *History) {
				h.Delivered("s1", 11, makePayload("s1", 12, 1, 64))
			},
			rule: "integrity", want: "misplaced: it is source s1 seq 12's",
		},
		{
			name: "final read given a damaged payload",
			mutate: func(h *History) {
				finalRecord(h, "s1", 7, flipped(makePayload("s1", 7, 1, 64), 63, 7))
			},
			rule: "integrity", want: "the final read was given 1 payloads that are not what the publisher sent (7)",
		},
		{
			name: "final read given a foreign payload beyond the acknowledged ones",
			mutate: func(h *History) {
				finalRecord(h, "s1", 11, []byte("hello"))
				h.Final["s1"].High = 11
			},
			rule: "integrity", want: "seq 11 (foreign)",
		},
		{
			name: "follower handed a stranger's payload",
			mutate: func(h *History) {
				h.Delivered("s1", 11, strangerPayload(1))
			},
			rule: "stranger", want: "handed 1 payloads the stranger sent (the first as seq 11)",
		},
		{
			name: "final read given a stranger's payload",
			mutate: func(h *History) {
				finalRecord(h, "s1", 3, strangerPayload(2))
			},
			rule: "stranger", want: "final read was given 1 payloads the stranger sent: 3",
		},
		{
			name: "store holds the stranger's source",
			mutate: func(h *History) {
				h.ObserveStore("B", statusWithSources("G1S3", "s1", 0, strangerSourcePrefix+"-raft", 0))
			},
			rule: "stranger", want: "store G1S3 (host B) holds source zz-stranger-raft",
		},
		{
			name: "store released messages no retention limit could",
			mutate: func(h *History) {
				h.ObserveStore("A", statusWithSources("G1S1", "s1", 5))
			},
			rule: "retention", want: "released source s1 through 5",
		},
		{
			name: "store released messages no retention limit could, with a stranger about",
			mutate: func(h *History) {
				strangerFault(h)
				h.ObserveStore("A", statusWithSources("G1S1", "s1", 5))
			},
			rule: "stranger", want: "a Trim no leader of its group decided",
		},
		{
			name: "retention released messages it may release",
			mutate: func(h *History) {
				h.RetentionReleases = true
				h.ObserveStore("A", statusWithSources("G1S1", "s1", 5))
			},
		},
		{
			name: "store accepted a forged AppendEntries",
			mutate: func(h *History) {
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S3", Port: "raft", Act: "AppendEntries in the store's term", Accepted: true})
			},
			rule: "stranger", want: "the raft port of G1S3 accepted 1 forgeries",
		},
		{
			name: "store refused the stranger",
			mutate: func(h *History) {
				strangerFault(h)
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S3", Port: "client", Act: "Publish without Register", Detail: "refused"})
			},
		},
		{
			name: "daemon exited while the stranger sent",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.Exits = append(h.Exits, DaemonExit{Host: "B", Incarnation: 1, At: f.Start.Add(time.Second), Err: "exit status 2"})
			},
			rule: "stranger", want: "host B's daemon (incarnation 1) exited",
		},
		{
			name: "the previous release's client port accepts a forgery the head refuses",
			mutate: func(h *History) {
				previousOnFullDisk(h, "B", true) // host A on the previous release
				h.Layout = append(h.Layout, StoreLayout{Name: "G1S1", Group: 1, Host: "A"})
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S1", Port: "client", Act: "a Publish of its own source far past its highest", Accepted: true})
			},
		},
		{
			name: "the new binary's client port accepts a forgery",
			mutate: func(h *History) {
				previousOnFullDisk(h, "B", false)
				h.Layout = append(h.Layout, StoreLayout{Name: "G1S1", Group: 1, Host: "A"})
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S1", Port: "client", Act: "a Publish of its own source far past its highest", Accepted: true})
			},
			rule: "stranger", want: "the client port of G1S1 accepted 1 forgeries",
		},
		{
			name: "a forgery sent to the new binary, taken by the previous release's leader it redirected to",
			mutate: func(h *History) {
				mixedHosts(h)
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S1", Port: "client", Act: "an anonymous Consumed of a registered receiver name", Accepted: true, Detail: "source s1 at 127.0.0.3:300: receiver r moved to 9"})
			},
		},
		{
			name: "a forgery sent to the previous release, taken by the new binary's leader it redirected to",
			mutate: func(h *History) {
				mixedHosts(h)
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S3", Port: "client", Act: "an anonymous Consumed of a registered receiver name", Accepted: true, Detail: "source s1 at 127.0.0.2:100: receiver r moved to 9"})
			},
			rule: "stranger", want: "the client port of G1S3 accepted 1 forgeries",
		},
		{
			name: "the previous release's raft port accepts a forgery",
			mutate: func(h *History) {
				previousOnFullDisk(h, "B", true)
				h.Layout = append(h.Layout, StoreLayout{Name: "G1S1", Group: 1, Host: "A"})
				h.Stranger(StrangerAct{At: time.Now(), Store: "G1S1", Port: "raft", Act: "AppendEntries in the store's term", Accepted: true})
			},
			rule: "stranger", want: "the raft port of G1S1 accepted 1 forgeries",
		},
		{
			name: "store failed while the stranger sent",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: "B", Store: "G2S2", At: f.End, Error: "failed to apply"})
			},
			rule: "stranger", want: "store G2S2 (host B) failed",
		},
		{
			name: "a corrupt-store's damage found while the stranger sent is not the stranger's",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.Fault(FaultRecord{Kind: CorruptStore, Target: "B", Start: f.Start.Add(-5 * time.Second), End: f.Start.Add(-3 * time.Second), Damaged: []string{"G2S2"}})
				h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: "B", Store: "G2S2", At: f.Start.Add(2 * time.Second), Error: "store G2S2 stopped: cannot durably apply committed entries: a log run refers to raft log entry 650, which no count records; " + filesMarkedDamaged})
			},
		},
		{
			name: "a store the corrupt-store left alone fails while the stranger sent",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.Fault(FaultRecord{Kind: CorruptStore, Target: "B", Start: f.Start.Add(-5 * time.Second), End: f.Start.Add(-3 * time.Second), Damaged: []string{"G1S3"}})
				h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: "B", Store: "G2S2", At: f.Start.Add(2 * time.Second), Error: "store G2S2 stopped: " + filesMarkedDamaged})
			},
			rule: "stranger", want: "store G2S2 (host B) failed",
		},
		{
			name: "a damaged store fails for another reason while the stranger sent",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.Fault(FaultRecord{Kind: CorruptStore, Target: "B", Start: f.Start.Add(-5 * time.Second), End: f.Start.Add(-3 * time.Second), Damaged: []string{"G2S2"}})
				h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: "B", Store: "G2S2", At: f.Start.Add(2 * time.Second), Error: "store G2S2 stopped: raft: out of memory"})
			},
			rule: "stranger", want: "store G2S2 (host B) failed",
		},
		{
			name: "a damaged store's second damage failure while the stranger sent",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.Fault(FaultRecord{Kind: CorruptStore, Target: "B", Start: f.Start.Add(-5 * time.Second), End: f.Start.Add(-3 * time.Second), Damaged: []string{"G2S2"}})
				h.StoreFailures = append(h.StoreFailures,
					StoreFailure{Host: "B", Store: "G2S2", At: f.Start.Add(-time.Second), Error: "store G2S2 stopped: " + filesMarkedDamaged},
					StoreFailure{Host: "B", Store: "G2S2", At: f.Start.Add(2 * time.Second), Error: "store G2S2 stopped again: " + filesMarkedDamaged})
			},
			rule: "stranger", want: "stopped again",
		},
		{
			name: "store failure outside a stranger's time is not the stranger's",
			mutate: func(h *History) {
				f := strangerFault(h)
				h.StoreFailures = append(h.StoreFailures, StoreFailure{Host: "B", Store: "G2S2", At: f.Restored.Add(time.Second), Error: "catching up"})
			},
		},
		{
			name: "daemon exited by itself",
			mutate: func(h *History) {
				h.DaemonExited("A", 2, errors.New("exit status 2"))
			},
			rule: "liveness", want: "host A's daemon (incarnation 2) exited by itself",
		},
		{
			name: "the previous release's daemon exits on a full disk",
			mutate: func(h *History) {
				previousOnFullDisk(h, "A", true)
				h.DaemonExited("A", 7, errors.New("exit status 1"))
			},
		},
		{
			name: "the new binary's daemon exits on a full disk",
			mutate: func(h *History) {
				previousOnFullDisk(h, "A", false)
				h.DaemonExited("A", 7, errors.New("exit status 1"))
			},
			rule: "liveness", want: "host A's daemon (incarnation 7) exited by itself",
		},
		{
			name: "the previous release's daemon exits outside a full disk",
			mutate: func(h *History) {
				previousOnFullDisk(h, "B", true)
				h.DaemonExited("A", 7, errors.New("exit status 1"))
			},
			rule: "liveness", want: "host A's daemon (incarnation 7) exited by itself",
		},
		{
			name:   "harness problem",
			mutate: func(h *History) { h.Problemf("not-restored", "group 1 has no leader") },
			rule:   "liveness", want: "group 1 has no leader",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := healthy(10)
			tc.mutate(h)
			res := Check(h)
			if res.Lost != tc.lost {
				t.Errorf("lost = %d, want %d", res.Lost, tc.lost)
			}
			if tc.rule == "" {
				if len(res.Violations) != 0 {
					t.Fatalf("want no violation, got %v", res.Violations)
				}
				return
			}
			for _, v := range res.Violations {
				if v.Rule == tc.rule && strings.Contains(v.Detail, tc.want) {
					return
				}
			}
			t.Fatalf("want a %s violation containing %q, got %v", tc.rule, tc.want, res.Violations)
		})
	}
}

func TestCheckCounts(t *testing.T) {
	h := healthy(10)
	restartPublisher(h, 12, 15)
	res := Check(h)
	if res.Acknowledged != 14 || res.Delivered != 14 || res.Lost != 0 {
		t.Fatalf("acknowledged %d delivered %d lost %d, want 14 14 0", res.Acknowledged, res.Delivered, res.Lost)
	}
	// 11 was never acknowledged and never delivered nor reported: the
	// follower skipped it without being told.
	if len(res.Violations) != 1 || !strings.Contains(res.Violations[0].Detail, "11-11 before 12") {
		t.Fatalf("violations = %v", res.Violations)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	p := makePayload("orders", 12345, 7, 100)
	if len(p) != 100 {
		t.Fatalf("payload is %d bytes, want 100", len(p))
	}
	info, ok := parsePayload(p)
	if !ok || info != (payloadInfo{Source: "orders", Seq: 12345, Incarnation: 7}) {
		t.Fatalf("parsePayload = %+v %v", info, ok)
	}
	if payloadHash(p) == payloadHash(makePayload("orders", 12345, 8, 100)) {
		t.Fatal("two incarnations' payloads for one sequence number hash alike")
	}
	if _, ok := parsePayload([]byte("hello")); ok {
		t.Fatal("parsePayload accepted a foreign payload")
	}
}

func TestHistoryRecordsOnlyGroupIDChanges(t *testing.T) {
	h := NewHistory(0, 1, nil)
	for _, id := range []string{"", "", "x", "x", "", "x"} {
		h.ObserveGroupID("A", "G1S1", 1, id)
	}
	if len(h.GroupIDs) != 4 {
		t.Fatalf("recorded %d observations, want 4 (changes only): %+v", len(h.GroupIDs), h.GroupIDs)
	}
	if err := h.Stable("s1", 1, 5, 7, []string{"a"}); err == nil {
		t.Fatal("a stable range with too few hashes was accepted")
	}
}

func TestLongestStall(t *testing.T) {
	h := NewHistory(0, 1, []string{"s1"})
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	h.Registrations = []Registration{{Source: "s1", Incarnation: 1, FirstSeq: 1, At: t0}, {Source: "s1", Incarnation: 2, FirstSeq: 50, At: t0.Add(20 * time.Second)}}
	h.StableTimes = []StableTime{
		{Source: "s1", Incarnation: 1, Last: 10, At: t0.Add(time.Second)},
		{Source: "s1", Incarnation: 1, Last: 40, At: t0.Add(5 * time.Second)}, // 4 s stall
		{Source: "s1", Incarnation: 2, Last: 60, At: t0.Add(22 * time.Second)},
	}
	got, where := longestStall(h)
	if got != 4*time.Second || !strings.Contains(where, "incarnation 1") {
		t.Fatalf("longestStall = %v %q, want 4s in incarnation 1 (the gap between incarnations does not count)", got, where)
	}
	// Incarnation 2 was killed 7 s after its last stable report.
	h.Ends = []StableTime{{Source: "s1", Incarnation: 1, At: t0.Add(6 * time.Second)}, {Source: "s1", Incarnation: 2, At: t0.Add(29 * time.Second)}}
	got, where = longestStall(h)
	if got != 7*time.Second || !strings.Contains(where, "until it stopped") {
		t.Fatalf("longestStall = %v %q, want 7s before incarnation 2 stopped", got, where)
	}
}

// flipped returns a copy of p with one bit inverted.
func flipped(p []byte, at, bit int) []byte {
	q := slices.Clone(p)
	q[at] ^= 1 << bit
	return q
}

// deliveryOf is the Delivery the history records for payload.
func deliveryOf(source string, seq uint64, payload []byte) Delivery {
	h := NewHistory(0, 1, []string{source})
	h.Delivered(source, seq, payload)
	return h.Deliveries[source][0]
}

// finalRecord records what the final read does when it reads payload as
// seq of source.
func finalRecord(h *History, source string, seq uint64, payload []byte) {
	f := h.Final[source]
	if f.Damaged == nil {
		f.Damaged = map[uint64]string{}
	}
	f.Hashes[seq] = payloadHash(payload)
	if d := payloadDamage(source, seq, payload); d != "" {
		f.Damaged[seq] = d
	}
}

// statusWithSources is a store's status holding the given sources, each
// followed by its trimmed-through.
func statusWithSources(store string, pairs ...any) storeStatus {
	st := storeStatus{Name: store, State: "Follower"}
	for i := 0; i+1 < len(pairs); i += 2 {
		st.Sources = append(st.Sources, sourceStatus{Name: pairs[i].(string), TrimmedThrough: uint64(pairs[i+1].(int))})
	}
	return st
}

// strangerFault records a stranger fault against host B, healed and
// restored, and returns it.
func strangerFault(h *History) FaultRecord {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	f := FaultRecord{Kind: Stranger, Target: "B", Start: t0, End: t0.Add(3 * time.Second), Restored: t0.Add(5 * time.Second)}
	h.Fault(f)
	return f
}

// TestEveryBitFlipIsCaught flips each bit of a payload in turn: the
// damaged payload never passes as the one published, whatever bit it is.
func TestEveryBitFlipIsCaught(t *testing.T) {
	p := makePayload("s1", 4711, 3, payloadSize)
	if d := payloadDamage("s1", 4711, p); d != "" {
		t.Fatalf("the intact payload is judged %q", d)
	}
	for at := range p {
		for bit := range 8 {
			if payloadDamage("s1", 4711, flipped(p, at, bit)) == "" {
				t.Fatalf("flipping bit %d of byte %d (%q) goes unnoticed", bit, at, p[at])
			}
		}
	}
	for _, n := range []int{1, payloadSize / 2, payloadSize - 1} {
		if payloadDamage("s1", 4711, p[:n]) == "" {
			t.Fatalf("the payload cut to %d bytes goes unnoticed", n)
		}
	}
	if d := payloadDamage("s2", 4711, p); !strings.HasPrefix(d, damageMisplaced) {
		t.Fatalf("s1's payload delivered on s2 is judged %q", d)
	}
	if d := payloadDamage("s1", 1, strangerPayload(1)); d != damageStranger {
		t.Fatalf("a stranger's payload is judged %q", d)
	}
}

// previousOnFullDisk records a run of host A (incarnation 7) on the
// previous release's binary (or the new one) from a second ago, and a
// disk-full fault on host diskHost in force now (one of another host
// leaves A's run alone).
func previousOnFullDisk(h *History, diskHost string, previous bool) {
	now := time.Now()
	h.HostRuns = append(h.HostRuns, HostRun{Host: "A", Incarnation: 7, At: now.Add(-time.Second), Previous: previous})
	h.Faults = append(h.Faults, FaultRecord{Kind: DiskFull, Target: diskHost, Start: now.Add(-500 * time.Millisecond), End: now.Add(time.Minute)})
}

// mixedHosts records host A on the new binary and host B on the previous
// release's, with G1S1 on A (client port 100) and G1S3 on B (300).
func mixedHosts(h *History) {
	at := time.Now().Add(-time.Second)
	h.HostRuns = append(h.HostRuns, HostRun{Host: "A", Incarnation: 7, At: at}, HostRun{Host: "B", Incarnation: 7, At: at, Previous: true})
	h.Layout = append(h.Layout, StoreLayout{Name: "G1S1", Group: 1, Host: "A", ClientPort: 100}, StoreLayout{Name: "G1S3", Group: 1, Host: "B", ClientPort: 300})
}
