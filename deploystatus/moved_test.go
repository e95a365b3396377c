package deploystatus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"umstore/wire"
)

// An observer with the old deployment file finds the stores of a replaced
// host where their group says they listen now, and shows them there, as
// moved; a store that does not answer there, or where another store
// answers, stays down with both addresses in its error.
func TestStoresFoundWhereTheirGroupSaysTheyMoved(t *testing.T) {
	d := twoHosts(t) // A on 127.0.0.2, B on 127.0.0.3
	const g1s1At, g1s2At = "127.0.0.4:31011", "127.0.0.4:31012"
	list := &wire.MemberList{Store: "G1S3", Group: 1, Members: []wire.MemberAddr{
		{Name: "G1S1", RaftAddr: "127.0.0.4:30011", ClientAddr: g1s1At, Moved: true, Recorded: true},
		{Name: "G1S2", RaftAddr: "127.0.0.4:30012", ClientAddr: g1s2At, Moved: true},
		{Name: "G1S3", RaftAddr: "127.0.0.3:30013", ClientAddr: clientAddr(t, d, "G1S3")},
	}}
	answers := map[string]*wire.ProbeReply{
		clientAddr(t, d, "G1S3"): {Store: "G1S3", Group: 1, State: "Follower", HasState: true, Leader: g1s1At},
		g1s1At:                   {Store: "G1S1", Group: 1, State: "Leader", HasState: true},
		g1s2At:                   {Store: "G2S9", Group: 1, State: "Follower"}, // not the store the group names
	}
	p := NewProber(d.Stores(), &wire.Dialer{}, testLimits)
	p.probe = func(ctx context.Context, addr string) (*wire.ProbeReply, *wire.Pong, *wire.MemberList, error) {
		rep, ok := answers[addr]
		if !ok {
			return nil, nil, nil, errors.New("connection refused")
		}
		if rep.Store == "G1S3" {
			return rep, nil, list, nil
		}
		return rep, nil, nil, nil
	}
	p.sources = func(context.Context, int, string) ([]wire.SourceState, []wire.SourceReceivers, error) {
		return nil, nil, nil
	}
	r := p.Round()
	if got := r.Stores["G1S1"]; got.Reply == nil || got.At != g1s1At {
		t.Fatalf("G1S1: %+v, want found at %s", got, g1s1At)
	}
	if got := r.Stores["G1S2"]; got.Reply != nil || got.Err == nil || !strings.Contains(got.Err.Error(), g1s2At) {
		t.Fatalf("G1S2: %+v, want down, naming where its group placed it", got)
	}
	if got := r.Stores["G2S1"]; got.Reply != nil {
		t.Fatalf("G2S1, which no group places elsewhere, answered: %+v", got)
	}
	v := Build(d, nil, nil, nil, r, time.Now())
	for _, sv := range v.Stores {
		switch sv.Name {
		case "G1S1":
			if sv.Address != g1s1At || sv.MovedFrom != clientAddr(t, d, "G1S1") || sv.State != StateLeader {
				t.Errorf("G1S1 in the view: %+v", sv)
			}
		case "G1S3":
			if sv.Leader != "G1S1" {
				t.Errorf("G1S3's leader is shown as %q, want G1S1 (found at its new address)", sv.Leader)
			}
		}
	}
	if g := v.Groups[0]; g.Leader != "G1S1" {
		t.Errorf("group 1's leader: %q", g.Leader)
	}
	if s := v.Summary(); s.Groups[0].Stores[0].MovedFrom == "" {
		t.Errorf("the summary does not say G1S1 moved: %+v", s.Groups[0].Stores[0])
	}
}
