package repository

import (
	"reflect"
	"strings"
	"testing"
)

// regRecv registers receiver recv with source a.
func regRecv(recv, session string, paced bool, at int64) RegisterReceiver {
	return RegisterReceiver{Source: "a", Receiver: recv, Session: session, Paced: paced, UnixNano: at}
}

// wantRecv is the result of a receiver command on source a.
func wantRecv(recv, session string, seq uint64, created, changed bool) want {
	return want{Receiver: &ReceiverResult{Source: "a", Receiver: recv, Session: session, Seq: seq, Created: created, Changed: changed}}
}

// wantRegA is the result of the Register creating source a.
var wantRegA = want{Register: &RegisterResult{Source: "a", Created: true}}

func TestApplyReceiverRegistrations(t *testing.T) {
	runRegistrationCases(t, []registrationCase{
		{
			name:      "a new name is recorded without a position",
			cmds:      []any{Register{Source: "a", UnixNano: 1}, regRecv("r", "s1", false, 5)},
			wants:     []want{wantRegA, wantRecv("r", "s1", 0, true, true)},
			receivers: []ReceiverPosition{{Receiver: "r", Session: "s1", Active: true, RegisteredUnixNano: 5}},
		},
		{
			name: "a registration keeps the position, a Consumed keeps the registration",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				Consumed{Source: "a", Receiver: "r", Seq: 7, UnixNano: 2},
				regRecv("r", "s1", true, 3),
				Consumed{Source: "a", Receiver: "r", Seq: 9, UnixNano: 4},
			},
			wants: []want{wantRegA,
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 7, Advanced: true}},
				wantRecv("r", "s1", 7, false, true),
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 9, Advanced: true}},
			},
			receivers: []ReceiverPosition{{Receiver: "r", Seq: 9, UnixNano: 4, Session: "s1", Paced: true, Active: true, RegisteredUnixNano: 3}},
		},
	})
}

// registrationCase is one case of TestApplyReceiverRegistrations and its siblings.
type registrationCase struct {
	name      string
	cmds      []any
	wants     []want
	receivers []ReceiverPosition // Receivers("a") afterwards
}

// Expiries and forgets of receivers: of the active session, stale and
// repeated ones, a registration after them, and their refusals.
func TestApplyReceiverExpiryAndForget(t *testing.T) {
	runRegistrationCases(t, []registrationCase{
		{
			name: "expiry of the active session makes it inactive, keeping everything else",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				regRecv("r", "s1", true, 3),
				Consumed{Source: "a", Receiver: "r", Seq: 4, UnixNano: 4},
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 50},
			},
			wants: []want{wantRegA, wantRecv("r", "s1", 0, true, true),
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 4, Advanced: true}},
				wantRecv("r", "s1", 4, false, true),
			},
			receivers: []ReceiverPosition{{Receiver: "r", Seq: 4, UnixNano: 4, Session: "s1", Paced: true, RegisteredUnixNano: 3, ExpiredUnixNano: 50}},
		},
		{
			name: "stale, repeated and unknown expiries change nothing",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				regRecv("r", "s1", false, 3),
				regRecv("r", "s2", false, 4), // a new instance took the name over
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 50},
				ExpireReceiver{Source: "a", Receiver: "nobody", Session: "s1", UnixNano: 51},
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s2", UnixNano: 52},
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s2", UnixNano: 53},
			},
			wants: []want{wantRegA, wantRecv("r", "s1", 0, true, true), wantRecv("r", "s2", 0, false, true),
				wantRecv("r", "s1", 0, false, false),
				wantRecv("nobody", "s1", 0, false, false),
				wantRecv("r", "s2", 0, false, true),
				wantRecv("r", "s2", 0, false, false),
			},
			receivers: []ReceiverPosition{{Receiver: "r", Session: "s2", RegisteredUnixNano: 4, ExpiredUnixNano: 52}},
		},
		{
			name: "a registration after an expiry makes the receiver active again",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				regRecv("r", "s1", true, 3),
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 50},
				regRecv("r", "s1", true, 60),
			},
			wants:     []want{wantRegA, wantRecv("r", "s1", 0, true, true), wantRecv("r", "s1", 0, false, true), wantRecv("r", "s1", 0, false, true)},
			receivers: []ReceiverPosition{{Receiver: "r", Session: "s1", Paced: true, Active: true, RegisteredUnixNano: 60, ExpiredUnixNano: 50}},
		},
		{
			name: "forget deletes an inactive receiver on its session, never an active one",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				regRecv("r", "s1", false, 3),
				Consumed{Source: "a", Receiver: "r", Seq: 8, UnixNano: 4},
				ForgetReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 5}, // active: kept
				ExpireReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 6},
				ForgetReceiver{Source: "a", Receiver: "r", Session: "other", UnixNano: 7}, // another session: kept
				ForgetReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 8},
				ForgetReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 9}, // already gone
				regRecv("r", "s3", false, 10),                                          // starts as a new name
			},
			wants: []want{wantRegA, wantRecv("r", "s1", 0, true, true),
				{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 8, Advanced: true}},
				wantRecv("r", "s1", 8, false, false),
				wantRecv("r", "s1", 8, false, true),
				wantRecv("r", "other", 8, false, false),
				wantRecv("r", "s1", 8, false, true),
				wantRecv("r", "s1", 0, false, false),
				wantRecv("r", "s3", 0, true, true),
			},
			receivers: []ReceiverPosition{{Receiver: "r", Session: "s3", Active: true, RegisteredUnixNano: 10}},
		},
		{
			name: "refused before the source is looked up, and on a source the group does not hold",
			cmds: []any{
				Register{Source: "a", UnixNano: 1},
				RegisterReceiver{Source: "a", Receiver: "", Session: "s"},
				RegisterReceiver{Source: "a", Receiver: strings.Repeat("r", MaxSourceNameLen+1), Session: "s"},
				RegisterReceiver{Source: "a", Receiver: "r", Session: ""},
				RegisterReceiver{Source: "", Receiver: "r", Session: "s"},
				RegisterReceiver{Source: "nobody", Receiver: "r", Session: "s"},
				ExpireReceiver{Source: "a", Receiver: "r", Session: ""},
				ExpireReceiver{Source: "nobody", Receiver: "r", Session: "s"},
				ForgetReceiver{Source: "a", Receiver: "", Session: "s"},
				ForgetReceiver{Source: "nobody", Receiver: "r", Session: "s"},
			},
			wants: []want{wantRegA,
				{Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand}, {Err: ErrBadCommand},
				{Err: ErrUnknownSource},
				{Err: ErrBadCommand}, {Err: ErrUnknownSource},
				{Err: ErrBadCommand}, {Err: ErrUnknownSource},
			},
			receivers: []ReceiverPosition{},
		},
	})
}

// runRegistrationCases applies each case to a fresh repository and checks
// its results and the receivers of source a.
func runRegistrationCases(t *testing.T, tests []registrationCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := applyChecked(t, tt.cmds, tt.wants)
			got, err := r.Receivers("a")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.receivers) {
				t.Errorf("Receivers = \n  %+v\nwant\n  %+v", got, tt.receivers)
			}
			if sources, _ := r.Sources(); len(sources) != 1 {
				t.Errorf("%d sources: a receiver command must never create one", len(sources))
			}
		})
	}
}

func TestReceiverRegistrationsSurviveReopenAndBatching(t *testing.T) {
	cmds := []any{
		Register{Source: "a", UnixNano: 1},
		RegisterReceiver{Source: "a", Receiver: "r", Session: "s1", Paced: true, UnixNano: 2},
		Consumed{Source: "a", Receiver: "r", Seq: 3, UnixNano: 3},
		ExpireReceiver{Source: "a", Receiver: "r", Session: "s1", UnixNano: 4},
		RegisterReceiver{Source: "a", Receiver: "q", Session: "s2", UnixNano: 5},
	}
	applyBatchedBothWays(t, cmds, []want{
		{Register: &RegisterResult{Source: "a", Created: true}},
		{Receiver: &ReceiverResult{Source: "a", Receiver: "r", Session: "s1", Created: true, Changed: true}},
		{Consumed: &ConsumedResult{Source: "a", Receiver: "r", Seq: 3, Advanced: true}},
		{Receiver: &ReceiverResult{Source: "a", Receiver: "r", Session: "s1", Seq: 3, Changed: true}},
		{Receiver: &ReceiverResult{Source: "a", Receiver: "q", Session: "s2", Created: true, Changed: true}},
	})
	r := openApplied(t, cmds...)
	before, _ := r.Receivers("a")
	r = reopen(t, r)
	after, err := r.Receivers("a")
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Errorf("after reopen: %+v, %v; want %+v", after, err, before)
	}
	pos, known, found, err := r.Receiver("a", "r")
	if err != nil || !known || !found || pos.Seq != 3 || pos.Active || !pos.Paced {
		t.Errorf("Receiver(a, r) = %+v known=%v found=%v %v", pos, known, found, err)
	}
	if _, known, found, _ := r.Receiver("a", "nobody"); !known || found {
		t.Errorf("Receiver(a, nobody): known=%v found=%v, want true false", known, found)
	}
	if _, known, _, _ := r.Receiver("nobody", "r"); known {
		t.Error("Receiver(nobody, r) reports the source known")
	}
}

func TestApplyRegisterPaced(t *testing.T) {
	paced := func(mode Pacing, at int64) RegisterPaced {
		return RegisterPaced{Register: Register{Source: "a", Session: "p", UnixNano: at}, Pacing: mode}
	}
	r := openTest(t)
	res := mustApply(t, r, logOf(1,
		paced(PacingBlocking, 1),
		RegisterReceiver{Source: "a", Receiver: "r1", Session: "x", Paced: true, UnixNano: 2},
		RegisterReceiver{Source: "a", Receiver: "r2", Session: "y", Paced: true, UnixNano: 3},
		RegisterReceiver{Source: "a", Receiver: "plain", Session: "z", UnixNano: 4},
		Consumed{Source: "a", Receiver: "r1", Seq: 40},
		Consumed{Source: "a", Receiver: "r2", Seq: 25},
		paced(3, 5),
		RegisterPaced{Register: Register{Source: "", UnixNano: 6}, Pacing: PacingBlocking},
	))
	checkResults(t, res[:1], []want{{Register: &RegisterResult{Source: "a", Created: true}}})
	checkRefusalsSay(t, res, map[int]string{6: "pacing mode 3", 7: "empty source name"})
	st, err := r.Pacing("a")
	if err != nil {
		t.Fatal(err)
	}
	if want := (PacingState{Mode: PacingBlocking, Holders: 2, ConsumedThrough: 25}); st != want {
		t.Errorf("Pacing = %+v, want %+v (the plain receiver holds nothing)", st, want)
	}
	// Expiring the slowest holder leaves the other's position.
	mustApply(t, r, logOf(9, ExpireReceiver{Source: "a", Receiver: "r2", Session: "y", UnixNano: 7}))
	if st, _ := r.Pacing("a"); st.Holders != 1 || st.ConsumedThrough != 40 {
		t.Errorf("after expiring r2: %+v, want 1 holder through 40", st)
	}
	// A plain Register leaves the mode; RegisterPaced with none clears it.
	mustApply(t, r, logOf(10, Register{Source: "a", Session: "p2", UnixNano: 8}))
	if st, _ := r.Pacing("a"); st.Mode != PacingBlocking {
		t.Errorf("a plain Register changed the pacing to %v", st.Mode)
	}
	mustApply(t, r, logOf(11, paced(PacingNonBlocking, 9)))
	if st, _ := r.Pacing("a"); st.Mode != PacingNonBlocking {
		t.Errorf("pacing %v, want non-blocking", st.Mode)
	}
	mustApply(t, r, logOf(12, paced(PacingNone, 10)))
	if st, _ := r.Pacing("a"); st.Mode != PacingNone {
		t.Errorf("pacing %v, want none", st.Mode)
	}
	if info, _, _ := r.Source("a"); info.Session != "p" || info.LastRegisterUnixNano != 10 {
		t.Errorf("RegisterPaced did not register: %+v", info)
	}
	if _, err := r.Pacing("nobody"); err == nil {
		t.Error("Pacing of an unknown source: no error")
	}
}

func TestDigestCoversRegistrationsAndPacing(t *testing.T) {
	if d := digestAfter(t, pinnedLog()); d != pinnedDigest {
		t.Fatalf("digest of a repository without registrations changed: %s, want %s", d, pinnedDigest)
	}
	reg := func(recv, session string, paced bool, at int64) RegisterReceiver {
		return RegisterReceiver{Source: "a", Receiver: recv, Session: session, Paced: paced, UnixNano: at}
	}
	checkDigestVariants(t, pinnedLog(), "registrations", map[string][]any{
		"none":                 nil,
		"refused unknown":      {RegisterReceiver{Source: "c", Receiver: "r", Session: "s"}},
		"refused no session":   {reg("r", "", false, 1)},
		"refused pacing mode":  {RegisterPaced{Register: Register{Source: "a", Session: "s"}, Pacing: 7}},
		"pacing none":          {RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingNone}},
		"stale expiry":         {ExpireReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: 1}},
		"registered":           {reg("r", "s", false, 1)},
		"other session":        {reg("r", "t", false, 1)},
		"other name":           {reg("q", "s", false, 1)},
		"paced":                {reg("r", "s", true, 1)},
		"other time":           {reg("r", "s", false, 2)},
		"expired":              {reg("r", "s", false, 1), ExpireReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: 5}},
		"expired other time":   {reg("r", "s", false, 1), ExpireReceiver{Source: "a", Receiver: "r", Session: "s", UnixNano: 6}},
		"consumed only":        {Consumed{Source: "a", Receiver: "q", Seq: 1}},
		"blocking":             {RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingBlocking}},
		"non-blocking":         {RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingNonBlocking}},
		"blocking then none":   {RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingBlocking}, RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingNone}},
		"registered and paced": {reg("r", "s", false, 1), RegisterPaced{Register: Register{Source: "a", Session: "s", UnixNano: 200}, Pacing: PacingBlocking}},
	}, func(name string) bool {
		switch name {
		case "none", "refused unknown", "refused no session", "refused pacing mode", "pacing none", "stale expiry", "blocking then none":
			return true
		}
		return false
	})
	// Forgetting r leaves what q's Consumed made, as if r never was.
	a := digestAfter(t, pinnedLog(), RegisterReceiver{Source: "a", Receiver: "r", Session: "s"}, Consumed{Source: "a", Receiver: "q", Seq: 1}, ExpireReceiver{Source: "a", Receiver: "r", Session: "s"}, ForgetReceiver{Source: "a", Receiver: "r", Session: "s"})
	b := digestAfter(t, pinnedLog(), Consumed{Source: "a", Receiver: "q", Seq: 1})
	if a != b {
		t.Error("a forgotten receiver still counts in the digest")
	}
}
