package main

import (
	"strings"
	"testing"
	"time"
)

// clockT0 is when the synthetic clock-jump histories begin.
var clockT0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// withClockJump records a clock-jump of host A stepped +2h at t0+1s and
// back at t0+6s, restored at t0+8s.
func withClockJump(h *History) {
	h.Fault(FaultRecord{Kind: ClockJump, Target: "A", Start: clockT0.Add(time.Second), End: clockT0.Add(6 * time.Second), Restored: clockT0.Add(8 * time.Second)})
	h.ClockStepped(ClockStep{Host: "A", Incarnation: 1, At: clockT0.Add(time.Second), Offset: 2 * time.Hour})
	h.ClockStepped(ClockStep{Host: "A", Incarnation: 1, At: clockT0.Add(6 * time.Second), Offset: 0, Previous: 2 * time.Hour})
}

// expiry is a leader on host A freeing s1's session for why at t0+d.
func expiry(session, why string, d time.Duration) SessionExpiry {
	return SessionExpiry{Host: "A", Incarnation: 1, Store: "G1S1", Source: "s1", Session: session, Why: why, At: clockT0.Add(d)}
}

// hostRuns records two incarnations of host B's daemon: the first from
// t0 until t0+end1, the second from t0+start2 (still running).
func hostRuns(h *History, end1, start2 time.Duration) {
	h.HostStarted(HostRun{Host: "B", Incarnation: 1, Addr: "127.0.0.3", At: clockT0})
	h.HostEnded("B", 1, clockT0.Add(end1))
	h.HostStarted(HostRun{Host: "B", Incarnation: 2, Addr: "127.0.0.3", At: clockT0.Add(start2)})
}

// locked is host B's incarnation inc locking G2S2 at t0+d.
func locked(inc int, d time.Duration) LockTaken {
	return LockTaken{Host: "B", Incarnation: inc, Store: "G2S2", Mode: "flock", Holder: "holder-" + string(rune('0'+inc)), At: clockT0.Add(d)}
}

// TestCheckClockRules shows each rule of clock-jump flag the violation it
// is for on a synthetic history, beside what it must let pass: the
// session rule (a running publisher's source freed for silence), the lock
// rule (a data directory locked while its previous holder ran) and the
// lifetime rule (messages released for age, a receiver forgotten, with
// limits no schedule reaches).
func TestCheckClockRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History)
		rule   string // "" = no violation
		want   string
	}{
		{name: "healthy", mutate: func(h *History) { withClockJump(h) }},
		{
			name: "a running publisher's source freed for silence",
			mutate: func(h *History) {
				withClockJump(h)
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whySilent, 7*time.Second))
			},
			rule: "session", want: "session pub-s1#1 was publisher incarnation 1's",
		},
		{
			name: "the detail names the clock step before it",
			mutate: func(h *History) {
				withClockJump(h)
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whySilent, 7*time.Second))
			},
			rule: "session", want: "host A's clock to +2h0m0s at 10:00:01.000",
		},
		{
			name: "a running publisher's source taken over for its silence",
			mutate: func(h *History) {
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whyTakenSilent, 31*time.Second))
			},
			rule: "session", want: "still running at the end",
		},
		{
			name: "a restarted publisher's takeover on the paced path, which names silence",
			mutate: func(h *History) {
				h.Ends = append(h.Ends, StableTime{Source: "s1", Incarnation: 1, At: clockT0.Add(5 * time.Second)})
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whyTakenSilent, 6*time.Second))
				restartPublisher(h, 11, 20)
			},
		},
		{
			name: "a running publisher's goodbye",
			mutate: func(h *History) {
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", "its publisher closed", 7*time.Second))
			},
		},
		{
			name: "freed for silence before the incarnation ended",
			mutate: func(h *History) {
				restartPublisher(h, 11, 20)
				h.Ends = append(h.Ends, StableTime{Source: "s1", Incarnation: 1, At: clockT0.Add(40 * time.Second)})
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whySilent, 39*time.Second))
			},
			rule: "session", want: "running until 10:00:40.000",
		},
		{
			name: "a killed publisher's source freed for silence",
			mutate: func(h *History) {
				h.Ends = append(h.Ends, StableTime{Source: "s1", Incarnation: 1, At: clockT0.Add(5 * time.Second)})
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", whySilent, 35*time.Second))
				restartPublisher(h, 11, 20)
			},
		},
		{
			name: "a running publisher's source taken over by its next incarnation",
			mutate: func(h *History) {
				h.Expiries = append(h.Expiries, expiry("pub-s1#1", "a newer incarnation of its publisher registered", 7*time.Second))
			},
		},
		{
			name: "a session no incarnation reported",
			mutate: func(h *History) {
				h.Expiries = append(h.Expiries, expiry("pub-s1#0", whySilent, 7*time.Second))
			},
		},
		{
			name: "a store locked while the daemon that held it ran",
			mutate: func(h *History) {
				hostRuns(h, 10*time.Second, 11*time.Second)
				h.Locks = append(h.Locks, locked(1, time.Second), locked(2, 9*time.Second))
			},
			rule: "lock", want: "ended only at 10:00:10.000",
		},
		{
			name: "a store locked by another daemon that never ended",
			mutate: func(h *History) {
				h.HostStarted(HostRun{Host: "B", Incarnation: 1, Addr: "127.0.0.3", At: clockT0})
				h.HostStarted(HostRun{Host: "B", Incarnation: 2, Addr: "127.0.0.3", At: clockT0.Add(5 * time.Second)})
				h.Locks = append(h.Locks, locked(2, 6*time.Second), locked(1, time.Second))
			},
			rule: "lock", want: "it was never seen to end",
		},
		{
			name: "a store locked again after its daemon was restarted",
			mutate: func(h *History) {
				hostRuns(h, 10*time.Second, 11*time.Second)
				h.Locks = append(h.Locks, locked(1, time.Second), locked(2, 12*time.Second))
			},
		},
		{
			name: "one daemon's own locks",
			mutate: func(h *History) {
				hostRuns(h, 10*time.Second, 11*time.Second)
				h.Locks = append(h.Locks, locked(1, time.Second), locked(1, 2*time.Second))
			},
		},
		{
			name: "messages released for age",
			mutate: func(h *History) {
				withClockJump(h)
				h.Lifetimes = &LifetimeLimits{RetentionMaxAge: time.Hour, ReceiverStateLifetime: time.Hour}
				h.AddRetentionLog(RetentionLog{Releases: map[string]map[string]int{"s1": {"age": 2, "messages": 5}}})
			},
			rule: "lifetime", want: "released messages for age 2 times",
		},
		{
			name: "a receiver forgotten",
			mutate: func(h *History) {
				withClockJump(h)
				h.Lifetimes = &LifetimeLimits{RetentionMaxAge: time.Hour, ReceiverStateLifetime: time.Hour}
				h.Forgotten = append(h.Forgotten, ReceiverForgotten{Host: "A", Incarnation: 1, Store: "G1S1", Source: "s1", Receiver: "chaos-s1", At: clockT0.Add(7 * time.Second)})
			},
			rule: "lifetime", want: "forgot receiver chaos-s1 of source s1",
		},
		{
			name: "releases for other reasons",
			mutate: func(h *History) {
				h.RetentionReleases = true
				h.Lifetimes = &LifetimeLimits{RetentionMaxAge: time.Hour, ReceiverStateLifetime: time.Hour}
				h.AddRetentionLog(RetentionLog{Releases: map[string]map[string]int{"s1": {"messages": 5, "consumed": 3}}})
			},
		},
		{
			name: "age releases without an age limit are not judged",
			mutate: func(h *History) {
				h.AddRetentionLog(RetentionLog{Releases: map[string]map[string]int{"s1": {"age": 2}}})
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := healthy(10)
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

// The daemon's lines about freed sources, forgotten receivers and locks,
// as they reach a host's log, are found with the incarnation that wrote
// them.
func TestScanHostLogSessionsAndLocks(t *testing.T) {
	log := strings.Join([]string{
		incarnationMarker + " incarnation=1 first start",
		`time=2026-01-01T10:00:01.000Z level=INFO msg="data directory locked" host=A store=G1S1 group=1 store=G1S1 dir=/d/G1S1 mode=flock holder=h-1`,
		`time=2026-01-01T10:00:02.000Z level=INFO msg="freed a source for a new publisher" host=A store=G1S1 group=1 source=s1 session=abc#1 why="silent for longer than the source activity timeout"`,
		`time=2026-01-01T10:00:02.500Z level=INFO msg="forgot a receiver whose state lifetime ended: its position is gone" host=A store=G1S1 group=1 source=s2 receiver=chaos-s2 lifetime=1h0m0s`,
		incarnationMarker + " incarnation=2 restart with state after kill -9",
		`time=2026-01-01T10:00:03.000Z level=INFO msg="data directory lease acquired" host=A store=G1S2 group=1 store=G1S2 dir=/d/G1S2 holder=h-2 version=1`,
		`time=2026-01-01T10:00:04.000Z level=INFO msg="took over the data directory lease" host=A store=G1S1 group=1 store=G1S1 dir=/d/G1S1 holder=h-3 version=7 previous_lease=expired previous_holder="pid 1 on host x (holder id h-1, since now)"`,
		`time=2026-01-01T10:00:05.000Z level=INFO msg="freed a source for a new publisher" host=A store=G1S1 group=1 source=s1 session=abc#1 why="a newer incarnation of its publisher registered"`,
	}, "\n")
	scan, err := scanHostLog("A", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Expiries) != 2 || scan.Expiries[0].Why != whySilent || scan.Expiries[0].Session != "abc#1" || scan.Expiries[0].Incarnation != 1 || scan.Expiries[1].Incarnation != 2 || scan.Expiries[0].At.IsZero() {
		t.Fatalf("expiries = %+v", scan.Expiries)
	}
	if len(scan.Forgotten) != 1 || scan.Forgotten[0].Receiver != "chaos-s2" || scan.Forgotten[0].Source != "s2" {
		t.Fatalf("forgotten = %+v", scan.Forgotten)
	}
	var got []string
	for _, l := range scan.Locks {
		got = append(got, l.Store+"/"+l.Mode+"/"+l.Holder+"/"+string(rune('0'+l.Incarnation)))
	}
	if strings.Join(got, " ") != "G1S1/flock/h-1/1 G1S2/lease/h-2/2 G1S1/lease/h-3/2" || !strings.Contains(scan.Locks[2].Previous, "holder id h-1") {
		t.Fatalf("locks = %v (%+v)", got, scan.Locks)
	}
}
