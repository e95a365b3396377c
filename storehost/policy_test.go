package storehost

import (
	"reflect"
	"testing"
	"time"

	"umstore/dirlock"
	"umstore/placement"
	"umstore/storegroup"
)

// The deployment's default policy is what the stores do by default: one
// statement of the defaults, checked against the other. Putting it into
// effect on storegroup's defaults changes nothing but the policy the
// stores report and the lock's mode, which storegroup leaves empty for
// flock.
func TestDefaultPolicyIsTheStoresDefault(t *testing.T) {
	got, want := BaseConfig(placement.DefaultPolicy()), storegroup.DefaultConfig()
	if got.Policy != placement.DefaultPolicy().Canonical() || got.PolicyDigest != placement.DefaultPolicy().Digest() || got.Lock.Mode != dirlock.ModeFlock {
		t.Fatalf("policy %q, digest %s, lock %+v", got.Policy, got.PolicyDigest, got.Lock)
	}
	got.Policy, got.PolicyDigest, got.Lock.Mode = "", "", ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("placement's default policy on storegroup's defaults:\n %+v\nstoregroup's defaults:\n %+v", got, want)
	}
	if placement.MinSnapshotInterval.String() == "" || storegroup.CheckSnapshotSettings(1, placement.MinSnapshotInterval) != nil {
		t.Fatal("placement's shortest snapshot interval is refused by the stores")
	}
}

// Each key of the policy sets its one field of the store's configuration,
// zero included where zero is a setting; a key that holds no setting keeps
// the default; the fields that are no part of the policy are left alone.
func TestApplyPolicy(t *testing.T) {
	def := storegroup.DefaultConfig()
	for _, tc := range []struct {
		name   string
		policy func(p *placement.Policy)
		check  func(c storegroup.Config) bool
	}{
		{"unset policy: the defaults", func(p *placement.Policy) { *p = placement.Policy{} }, func(c storegroup.Config) bool {
			c.Policy, c.PolicyDigest, c.Lock.Mode = "", "", ""
			c.ReceiverActivityTimeout, c.LogStore, c.Lock.Standby = def.ReceiverActivityTimeout, def.LogStore, false
			return reflect.DeepEqual(c, def)
		}},
		{"retention limits set to 0: no limit", func(p *placement.Policy) { p.Retention.MaxBytes, p.Retention.MaxAge = 0, 0 }, func(c storegroup.Config) bool {
			return c.RetentionMaxBytes == 0 && c.RetentionMaxAge == 0 && c.RetentionMaxMessages == 0
		}},
		{"retention set", func(p *placement.Policy) {
			p.Retention = placement.RetentionPolicy{MaxBytes: 1, MaxMessages: 2, MaxAge: placement.Duration(time.Hour), Interval: placement.Duration(time.Second)}
		}, func(c storegroup.Config) bool {
			return c.RetentionMaxBytes == 1 && c.RetentionMaxMessages == 2 && c.RetentionMaxAge == time.Hour && c.RetentionInterval == time.Second
		}},
		{"trailing logs 0: none kept", func(p *placement.Policy) { p.Snapshot.TrailingLogs = 0 }, func(c storegroup.Config) bool {
			return c.TrailingLogs == 0 && c.SnapshotThreshold == def.SnapshotThreshold
		}},
		{"snapshots set", func(p *placement.Policy) {
			p.Snapshot = placement.SnapshotPolicy{Threshold: 64, Interval: placement.Duration(time.Second), TrailingLogs: 16}
		}, func(c storegroup.Config) bool {
			return c.SnapshotThreshold == 64 && c.SnapshotInterval == time.Second && c.TrailingLogs == 16
		}},
		{"settle 0: no leader placement", func(p *placement.Policy) { p.Leadership.Settle = 0 }, func(c storegroup.Config) bool {
			return c.LeaderSettle == 0 && c.LeaderMinInterval == def.LeaderMinInterval
		}},
		{"timeout and repair rate set", func(p *placement.Policy) {
			p.SourceActivityTimeout, p.RepairRate = placement.Duration(10*time.Second), 1000
		}, func(c storegroup.Config) bool {
			return c.SourceActivityTimeout == 10*time.Second && c.RepairBytesPerSecond == 1000
		}},
		{"keys that hold no setting: the defaults", func(p *placement.Policy) {
			p.SourceActivityTimeout, p.RepairRate, p.Retention.Interval = 0, 0, -1
		}, func(c storegroup.Config) bool {
			return c.SourceActivityTimeout == def.SourceActivityTimeout && c.RepairBytesPerSecond == def.RepairBytesPerSecond && c.RetentionInterval == def.RetentionInterval
		}},
		{"lease lock", func(p *placement.Policy) {
			p.Lock = placement.LockPolicy{Mode: placement.LockLease, KeepAlive: placement.Duration(2 * time.Second), AcquireInterval: placement.Duration(5 * time.Second)}
		}, func(c storegroup.Config) bool {
			return reflect.DeepEqual(c.Lock, dirlock.Options{Mode: dirlock.ModeLease, KeepAlive: 2 * time.Second, AcquireInterval: 5 * time.Second, Standby: true})
		}},
		{"flock: its keepalive is the policy's only", func(p *placement.Policy) { p.Lock.KeepAlive = placement.Duration(3 * time.Second) }, func(c storegroup.Config) bool {
			return reflect.DeepEqual(c.Lock, dirlock.Options{Mode: dirlock.ModeFlock, Standby: true})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := placement.DefaultPolicy()
			tc.policy(&p)
			// The daemon's own settings, set before: no part of the policy.
			c := storegroup.DefaultConfig()
			c.ReceiverActivityTimeout, c.LogStore, c.Lock.Standby = 7*time.Second, storegroup.LogStoreBoltDB, true
			ApplyPolicy(&c, p)
			if tc.name != "unset policy: the defaults" && (c.ReceiverActivityTimeout != 7*time.Second || c.LogStore != storegroup.LogStoreBoltDB || !c.Lock.Standby) {
				t.Fatalf("the policy changed settings that are no part of it: %+v", c)
			}
			if !tc.check(c) {
				t.Fatalf("config %+v", c)
			}
			if want := p.WithDefaults(); c.Policy != want.Canonical() || c.PolicyDigest != want.Digest() {
				t.Fatalf("policy %q digest %s, want %q %s", c.Policy, c.PolicyDigest, want.Canonical(), want.Digest())
			}
		})
	}
}

// A policy put into effect reaches every store's configuration, with its
// digest, and each group's preferred members.
func TestPolicyReachesEveryStore(t *testing.T) {
	p := placement.DefaultPolicy()
	p.Retention.MaxMessages, p.Retention.MaxAge = 1000, placement.Duration(time.Hour)
	p.SourceActivityTimeout, p.KeepAliveInterval = placement.Duration(10*time.Second), placement.Duration(2*time.Second)
	p.Lock = placement.LockPolicy{Mode: placement.LockLease, KeepAlive: placement.Duration(2 * time.Second), AcquireInterval: placement.Duration(5 * time.Second)}
	p.Snapshot.TrailingLogs = 0
	p.Leadership.Settle = 0
	d := placement.Dev("127.0.0.1", 14000)
	d.Policy = p
	cfgs, err := Configs(d, "B", t.TempDir(), BaseConfig(p))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if c.PolicyDigest != p.Digest() || c.SourceActivityTimeout != 10*time.Second || c.LeaderSettle != 0 || c.Lock.Mode != dirlock.ModeLease || c.Lock.KeepAlive != 2*time.Second {
			t.Fatalf("%s: digest %s, activity %v, settle %v, lock %+v", c.Name, c.PolicyDigest, c.SourceActivityTimeout, c.LeaderSettle, c.Lock)
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
