package deploystatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"umstore/storegroup"
	"umstore/wire"
)

// A leader's receivers reach the view with their lag, and the summary's
// JSON carries each receiver's name and consumed position.
func TestReceiversInTheSummary(t *testing.T) {
	d := twoHosts(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	round := Round{
		Stores: map[string]ProbeResult{"G1S3": {Reply: &wire.ProbeReply{Store: "G1S3", Group: 1, State: "Leader", HasState: true}}},
		Sources: map[int]LeaderSources{1: {From: "G1S3",
			Sources: []wire.SourceState{{Name: "orders", HighSeq: 3000, LowSeq: 1, Count: 3000}, {Name: "quiet", HighSeq: 5}},
			Receivers: []wire.SourceReceivers{{Source: "orders", HighSeq: 3000, Pacing: wire.PacingBlocking, Receivers: []wire.ReceiverState{
				{Name: "app1", Consumed: 1000, Active: true, Paced: true, LastActivityUnixNano: at.UnixNano()},
				{Name: "app2", Consumed: 3000},
			}}}}},
	}
	v := Build(d, nil, nil, nil, round, at)
	var orders, quiet Source
	for _, s := range v.Groups[0].Sources {
		switch s.Name {
		case "orders":
			orders = s
		case "quiet":
			quiet = s
		}
	}
	want := []Receiver{
		{Name: "app1", Consumed: 1000, Lag: 2000, Active: true, Paced: true, LastActivity: "2026-01-02T03:04:05Z"},
		{Name: "app2", Consumed: 3000},
	}
	if len(orders.Receivers) != 2 || orders.Receivers[0] != want[0] || orders.Receivers[1] != want[1] || orders.Pacing != wire.PacingBlocking {
		t.Fatalf("orders: %+v, want receivers %+v and blocking pacing", orders, want)
	}
	if len(quiet.Receivers) != 0 || quiet.Pacing != "" {
		t.Fatalf("a source without receivers shows %+v", quiet)
	}
	b, err := json.Marshal(v.Summary())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"receivers":[{"name":"app1","consumed":1000,"lag":2000,"active":true,"paced":true,"last_activity":"2026-01-02T03:04:05Z"}`) {
		t.Fatalf("summary JSON lacks the receiver: %s", b)
	}
	if strings.Contains(string(b), `"name":"quiet","high_seq":5,"oldest_seq":0,"count":0,"gaps":0,"receivers"`) {
		t.Fatalf("a source without receivers lists them: %s", b)
	}
	// A store run by the observer reports them through its status.
	got := statusReceivers([]storegroup.ReceiverStatus{{Name: "r", Consumed: 4, Lag: 1, Active: true}})
	if len(got) != 1 || got[0] != (Receiver{Name: "r", Consumed: 4, Lag: 1, Active: true}) {
		t.Fatalf("statusReceivers = %+v", got)
	}
}
