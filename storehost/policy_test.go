package storehost

import (
	"testing"
	"time"

	"umstore/dirlock"
	"umstore/placement"
	"umstore/storegroup"
)

// The deployment's default policy is what the stores do by default: one
// statement of the defaults, checked against the other.
func TestDefaultPolicyIsTheStoresDefault(t *testing.T) {
	if got, want := DefaultOptions().Policy(), placement.DefaultPolicy(); got != want {
		t.Fatalf("storegroup's defaults as a policy:\n %s\nplacement's default policy:\n %s", got.Canonical(), want.Canonical())
	}
	if placement.MinSnapshotInterval.String() == "" || storegroup.CheckSnapshotSettings(1, placement.MinSnapshotInterval) != nil {
		t.Fatal("placement's shortest snapshot interval is refused by the stores")
	}
}

// A policy put into effect reads back as itself, and reaches every
// store's configuration, with its digest.
func TestPolicyOptionsRoundTrip(t *testing.T) {
	p := placement.DefaultPolicy()
	p.Retention.MaxMessages, p.Retention.MaxAge = 1000, placement.Duration(time.Hour)
	p.SourceActivityTimeout, p.KeepAliveInterval = placement.Duration(10*time.Second), placement.Duration(2*time.Second)
	p.Lock = placement.LockPolicy{Mode: placement.LockLease, KeepAlive: placement.Duration(2 * time.Second), AcquireInterval: placement.Duration(5 * time.Second)}
	p.Snapshot.TrailingLogs = 0
	p.Leadership.Settle = 0
	o := PolicyOptions(p)
	if got := o.Policy(); got != p {
		t.Fatalf("round trip:\n got  %s\n want %s", got.Canonical(), p.Canonical())
	}
	if o.Lock.Mode != dirlock.ModeLease || o.Lock.KeepAlive != 2*time.Second || o.Lock.AcquireInterval != 5*time.Second {
		t.Fatalf("lock %+v", o.Lock)
	}
	d := placement.Dev("127.0.0.1", 14000)
	d.Policy = p
	cfgs, err := Configs(d, "B", t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if c.PolicyDigest != p.Digest() || c.SourceActivityTimeout != 10*time.Second || c.LeaderSettle != 0 {
			t.Fatalf("%s: digest %s, activity %v, settle %v", c.Name, c.PolicyDigest, c.SourceActivityTimeout, c.LeaderSettle)
		}
	}
	// Each group's preferred host: group 1's majority is on A, group 2's on B.
	want := map[int][]string{1: {"G1S1", "G1S2"}, 2: {"G2S2", "G2S3"}}
	for _, c := range cfgs {
		if len(c.PreferredMembers) != len(want[c.Group]) || c.PreferredMembers[0] != want[c.Group][0] {
			t.Fatalf("%s: preferred %s %v, want %v", c.Name, c.PreferredHost, c.PreferredMembers, want[c.Group])
		}
	}
}
