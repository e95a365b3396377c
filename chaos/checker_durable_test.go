package main

import (
	"strings"
	"testing"
	"time"
)

// t0 is when the synthetic durable receiver histories begin.
var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// hand records that incarnation inc of s1's durable receiver was handed
// from..to with incarnation 1's payloads, the first at ms and one every
// 100 ms, and returns when the last one was handed.
func hand(h *History, inc int, from, to uint64, ms int) int {
	for seq := from; seq <= to; seq++ {
		p := makePayload("s1", seq, 1, 64)
		h.DurableHanded("s1", inc, Handed{Seq: seq, Hash: payloadHash(p), PubInc: 1, At: at(ms)})
		ms += 100
	}
	return ms - 100
}

// recorded records a status sample of every store showing s1's durable
// receiver at pos.
func recorded(h *History, pos uint64, ms int) {
	for _, s := range []struct {
		host, name string
		group      int
	}{{"A", "G1S1", 1}, {"A", "G1S2", 1}, {"B", "G1S3", 1}, {"A", "G2S1", 2}, {"B", "G2S2", 2}, {"B", "G2S3", 2}} {
		st := storeStatus{Name: s.name, Group: s.group, Sources: []sourceStatus{{Name: "s1", Receivers: []receiverStatus{{Name: durableName("s1"), Consumed: pos, Active: true}}}}}
		h.mu.Lock()
		h.observeReceivers(s.host, st, at(ms))
		h.mu.Unlock()
	}
}

// durableHealthy is healthy(10) with s1's durable receiver killed once and
// restarted: incarnation 1 is handed 1..6 (t0 to t0+500ms), its groups
// record 4, it is killed at 650ms; incarnation 2 registers to resume at 5,
// is handed 5..10 (two messages again) and closes at 10, which every store
// records.
func durableHealthy() *History {
	h := healthy(10)
	h.DurableStarted("s1", 1, false, at(-100))
	h.DurableRegistered("s1", 1, 0, 0, "new name", at(-50))
	hand(h, 1, 1, 6, 0)
	recorded(h, 4, 450)
	h.DurableEnded("s1", 1, "killed", 0, at(650))
	h.DurableStarted("s1", 2, false, at(700))
	h.DurableRegistered("s1", 2, 5, 4, "both groups at 4", at(800))
	last := hand(h, 2, 5, 10, 900)
	h.DurableEnded("s1", 2, "closed", 10, at(last+100))
	recorded(h, 10, last+200)
	return h
}

// restartLate makes durableHealthy's incarnation 1 be killed at killMs,
// and incarnation 2 register to resume at resume, be handed resume..10
// from 500 ms after the kill, and close at 10.
func restartLate(h *History, killMs int, resume uint64) {
	d1, d2 := h.Durable["s1"][0], h.Durable["s1"][1]
	d1.Ended = at(killMs)
	d2.Started, d2.Registered = at(killMs+100), at(killMs+200)
	d2.Resume, d2.Consumed, d2.Handed = resume, resume-1, nil
	last := hand(h, 2, resume, 10, killMs+500)
	d2.Ended = at(last + 100)
	h.ReceiverPositions = h.ReceiverPositions[:6] // what incarnation 1 had recorded
	clear(h.lastReceiverPos)
	recorded(h, 10, last+200)
}

func TestCheckFlagsBrokenDurableReceiver(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History)
		rule   string // "" = no violation
		want   string
	}{
		{name: "healthy restart", mutate: func(h *History) {}},
		{
			name: "restart that resumes one past the last handed",
			mutate: func(h *History) {
				h.Durable["s1"][1].Resume = 7
				h.Durable["s1"][1].Handed = h.Durable["s1"][1].Handed[2:]
			},
		},
		{
			name: "handed twice within an incarnation",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Handed = append(d.Handed[:3:3], d.Handed[2:]...)
			},
			rule: "durable", want: "incarnation 2 of its durable receiver was handed 1 messages twice or out of order, e.g. 7 after 7",
		},
		{
			name: "skipped within an incarnation",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Handed = append(d.Handed[:3:3], d.Handed[4:]...)
			},
			rule: "durable", want: "skipped sequence numbers without being told, e.g. 8-8 before 9",
		},
		{
			name: "gap after a restart",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Resume, d.Handed = 8, d.Handed[3:]
			},
			rule: "durable", want: "resumed at 8, but its earlier incarnations had been handed only up to 6: 7-7 skipped (1 of them acknowledged",
		},
		{
			name: "gap after a restart that was handed nothing",
			mutate: func(h *History) {
				h.Durable["s1"][1].Resume, h.Durable["s1"][1].Handed = 9, nil
			},
			rule: "durable", want: "resumed at 9, but its earlier incarnations had been handed only up to 6",
		},
		{
			name: "first handed elsewhere than the registration said",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Handed = d.Handed[1:]
			},
			rule: "durable", want: "registered to resume at 5 but was first handed 6",
		},
		{
			name: "acknowledged message never handed",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Handed, d.Closed = d.Handed[:4], 8
			},
			rule: "durable", want: "2 acknowledged messages never reached its durable receiver: 9-10",
		},
		{
			name: "acknowledged messages reported missing",
			mutate: func(h *History) {
				d := h.Durable["s1"][1]
				d.Handed = append(d.Handed[:4], Handed{Seq: 9, Missing: true, Through: 10, At: at(1400)})
			},
			rule: "durable", want: "told 2 acknowledged messages were held by no group: 9-10",
		},
		{
			name: "redelivery of a message consumed long before the kill",
			mutate: func(h *History) {
				// Incarnation 1 was killed 5 s after it was handed 1..6;
				// incarnation 2 starts over at 2.
				restartLate(h, 5500, 2)
			},
			rule: "redelivery", want: "resumed at 2 and delivered 5 messages again, up to 6, which incarnation 1 had been handed at 10:00:00.500, 5s before it was killed (bound 2.1s)",
		},
		{
			name: "redelivery of a message consumed long before the kill, during a host fault",
			mutate: func(h *History) {
				restartLate(h, 5500, 2)
				h.Fault(FaultRecord{Kind: KillHost, Target: "B", Start: at(1000), End: at(3000), Restored: at(9000)})
			},
		},
		{
			name: "redelivery beyond even the host fault's allowance",
			mutate: func(h *History) {
				restartLate(h, 9500, 2)
				h.Fault(FaultRecord{Kind: KillHost, Target: "B", Start: at(1000), End: at(3000), Restored: at(9000)})
			},
			rule: "redelivery", want: "9s before it was killed (bound 7.1s, kill-host B from 10:00:01.000 in force)",
		},
		{
			name: "position recorded past what was handed",
			mutate: func(h *History) {
				recorded(h, 8, 700) // incarnation 2 was handed nothing yet
			},
			rule: "durable", want: "status samples show its durable receiver's position past what it had been handed",
		},
		{
			name: "close that did not record the position",
			mutate: func(h *History) {
				h.ReceiverPositions = h.ReceiverPositions[:len(h.ReceiverPositions)-3] // group 2 stayed at 4
				for _, st := range []string{"G2S1", "G2S2", "G2S3"} {
					h.LastSample[st] = at(2000)
				}
			},
			rule: "durable", want: "closed at 10, but the stores of group 2 recorded at most 4 afterwards",
		},
		{
			// Close could not record where the group holds the name for
			// another session (strong names): not a violation.
			name: "close refused by a group that holds the name for another session",
			mutate: func(h *History) {
				h.ReceiverPositions = h.ReceiverPositions[:len(h.ReceiverPositions)-3] // group 2 stayed at 4
				for _, st := range []string{"G2S1", "G2S2", "G2S3"} {
					h.LastSample[st] = at(2000)
				}
				h.DurableHeld("s1", 2, []int{2})
			},
		},
		{
			// ...but the other groups are still judged.
			name: "close that did not record where the name was this session's",
			mutate: func(h *History) {
				var kept []ReceiverPos
				for _, p := range h.ReceiverPositions {
					if p.Group != 1 || p.Consumed != 10 {
						kept = append(kept, p)
					}
				}
				h.ReceiverPositions = kept // group 1 stayed at 4
				for _, st := range []string{"G1S1", "G1S2", "G1S3"} {
					h.LastSample[st] = at(2000)
				}
				h.DurableHeld("s1", 2, []int{2})
			},
			rule: "durable", want: "closed at 10, but the stores of group 1 recorded at most 4 afterwards",
		},
		{
			name: "durable receiver handed a damaged payload",
			mutate: func(h *History) {
				x := &h.Durable["s1"][1].Handed[2]
				x.Damage = payloadDamage("s1", 7, flipped(makePayload("s1", 7, 1, 64), 40, 3))
			},
			rule: "integrity", want: "the durable receiver was handed 1 payloads that are not what the publisher sent, e.g. seq 7 to incarnation 2 (checksum",
		},
		{
			name: "durable receiver handed a stranger's payload",
			mutate: func(h *History) {
				h.Durable["s1"][1].Handed[2].Damage = payloadDamage("s1", 7, strangerPayload(1))
			},
			rule: "stranger", want: "the durable receiver was handed 1 payloads the stranger sent (the first as seq 7)",
		},
		{
			name: "durable receiver handed another payload",
			mutate: func(h *History) {
				h.Durable["s1"][1].Handed[2].Hash = payloadHash(makePayload("s1", 7, 2, 64))
			},
			rule: "rule2", want: "handed to durable receiver incarnation 2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := durableHealthy()
			tc.mutate(h)
			res := Check(h)
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

// TestRedeliveryMeasured: each restart reports what it delivered again and
// how long before the kill the first of those had been handed.
func TestRedeliveryMeasured(t *testing.T) {
	h := durableHealthy()
	res := Check(h)
	if len(res.Redeliveries) != 1 {
		t.Fatalf("redeliveries = %+v, want one", res.Redeliveries)
	}
	r := res.Redeliveries[0]
	want := Redelivery{Source: "s1", Incarnation: 2, Resumed: 5, Previous: 6, Count: 2, Window: 250 * time.Millisecond, Bound: 2100 * time.Millisecond}
	if r != want {
		t.Fatalf("redelivery = %+v, want %+v", r, want)
	}
	if res.DurableHanded != 12 {
		t.Fatalf("durable handed = %d, want 12", res.DurableHanded)
	}
	// An incarnation killed before it was handed anything measures nothing;
	// the next one is measured against everything handed before.
	h = durableHealthy()
	d2 := h.Durable["s1"][1]
	h.Durable["s1"][1] = &DurableIncarnation{Source: "s1", Incarnation: 2, Started: at(700), How: "killed", Ended: at(750)}
	d2.Incarnation = 3
	h.Durable["s1"] = append(h.Durable["s1"], d2)
	res = Check(h)
	if len(res.Violations) != 0 || len(res.Redeliveries) != 1 || res.Redeliveries[0].Incarnation != 3 || res.Redeliveries[0].Count != 2 {
		t.Fatalf("violations %v, redeliveries %+v", res.Violations, res.Redeliveries)
	}
}
