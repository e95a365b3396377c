package placement

import (
	"strings"
	"testing"
	"time"
)

// specFile is the specification's example deployment, to which the tests
// add keys.
const specFile = `version: 1
name: demo
hosts:
  - {name: A, address: 127.0.0.2}
  - {name: B, address: 127.0.0.3}
groups:
  - index: 1
    stores:
      - {name: G1S1, host: A, raft-port: 14011, client-port: 15011}
      - {name: G1S2, host: A, raft-port: 14012, client-port: 15012}
      - {name: G1S3, host: B, raft-port: 14013, client-port: 15013}
  - index: 2
    stores:
      - {name: G2S1, host: A, raft-port: 14021, client-port: 15021}
      - {name: G2S2, host: B, raft-port: 14022, client-port: 15022}
      - {name: G2S3, host: B, raft-port: 14023, client-port: 15023}
stability: {intragroup: quorum, intergroup: any}
`

// A file sets only the policy keys it names; the others keep their
// defaults, and a wholly default policy is left out when written.
func TestPolicyDefaultsAndOverrides(t *testing.T) {
	tests := []struct {
		name    string
		section string
		check   func(p Policy) bool
		written bool // the section appears when the deployment is written
	}{
		{"no section", "", func(p Policy) bool { return p == DefaultPolicy() }, false},
		{"empty section", "policy: {}\n", func(p Policy) bool { return p == DefaultPolicy() }, false},
		{"one key", "policy:\n  source-activity-timeout: 10s\n", func(p Policy) bool {
			want := DefaultPolicy()
			want.SourceActivityTimeout = Duration(10 * time.Second)
			return p == want
		}, true},
		{"zero means no limit", "policy:\n  retention: {max-bytes: 0}\n", func(p Policy) bool {
			return p.Retention.MaxBytes == 0 && p.Retention.Interval == Duration(5*time.Second)
		}, true},
		{"lease lock", "policy:\n  lock: {mode: lease, keepalive: 2s, acquire-interval: 5s}\n", func(p Policy) bool {
			return p.Lock == LockPolicy{Mode: LockLease, KeepAlive: Duration(2 * time.Second), AcquireInterval: Duration(5 * time.Second)}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(specFile+tt.section), "d.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(d.Policy) {
				t.Fatalf("policy %s", d.Policy.Canonical())
			}
			out, err := d.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(out), "policy:"); got != tt.written {
				t.Fatalf("written with the section: %v, want %v\n%s", got, tt.written, out)
			}
			again, err := Parse(out, "again.yaml")
			if err != nil {
				t.Fatalf("the written file does not parse: %v\n%s", err, out)
			}
			if again.Policy != d.Policy {
				t.Fatalf("round trip: %s, want %s", again.Policy.Canonical(), d.Policy.Canonical())
			}
		})
	}
}

func TestPolicyDigest(t *testing.T) {
	a, b := DefaultPolicy(), DefaultPolicy()
	if a.Digest() != b.Digest() {
		t.Fatal("equal policies, different digests")
	}
	b.Retention.MaxBytes = 1
	if a.Digest() == b.Digest() {
		t.Fatal("different policies, one digest")
	}
	diff := PolicyDiff(a.Canonical(), b.Canonical())
	if len(diff) != 1 || diff[0] != "retention.max-bytes: 104857600 vs 1" {
		t.Fatalf("diff %q", diff)
	}
	if d := PolicyDiff(a.Canonical(), a.Canonical()); len(d) != 0 {
		t.Fatalf("diff of equal policies: %q", d)
	}
}

// A group's preferred host: the host holding its majority unless the file
// names another (one running a store of the group) or "none".
func TestPreferredHost(t *testing.T) {
	tests := []struct {
		name, value, want string
		err               string
	}{
		{"derived", "", "A", ""},
		{"named", "B", "B", ""},
		{"none", "none", "", ""},
		{"unknown", "C", "", `groups[0].preferred-host: unknown host "C"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Dev("127.0.0.1", 14000)
			d.Groups[0].PreferredHost = tt.value
			err := d.Validate()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Validate: %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Groups[0].Preferred(); got != tt.want {
				t.Fatalf("Preferred() = %q, want %q", got, tt.want)
			}
		})
	}
	// No host holds a majority with three hosts: no preference unless named.
	d, _, err := Plan(Request{Hosts: []Host{{"A", "127.0.0.2"}, {"B", "127.0.0.3"}, {"C", "127.0.0.4"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range d.Groups {
		if g.Preferred() != "" || g.PreferredHost != "" {
			t.Fatalf("group %d prefers %q with no majority host", g.Index, g.Preferred())
		}
	}
}

// WithDefaults fills only the keys that hold no setting: a zero that is a
// setting (no retention limit, no trailing logs, no leader placement) is
// kept, and a policy with every key set is its own.
func TestPolicyWithDefaults(t *testing.T) {
	def := DefaultPolicy()
	if got := (Policy{}).WithDefaults(); got != def {
		t.Fatalf("unset policy: %s", got.Canonical())
	}
	if got := def.WithDefaults(); got != def {
		t.Fatalf("default policy: %s", got.Canonical())
	}
	p := def
	p.Retention.MaxBytes, p.Snapshot.TrailingLogs, p.Leadership.Settle, p.Lock.AcquireInterval = 0, 0, 0, 0
	if got := p.WithDefaults(); got != p {
		t.Fatalf("zero settings were replaced:\n got  %s\n want %s", got.Canonical(), p.Canonical())
	}
	p.RepairRate, p.SourceActivityTimeout, p.KeepAliveInterval, p.Retention.Interval, p.Lock = 0, 0, -1, 0, LockPolicy{}
	want := p
	want.RepairRate, want.SourceActivityTimeout, want.KeepAliveInterval, want.Retention.Interval, want.Lock = def.RepairRate, def.SourceActivityTimeout, def.KeepAliveInterval, def.Retention.Interval, LockPolicy{Mode: LockFlock, KeepAlive: def.Lock.KeepAlive}
	if got := p.WithDefaults(); got != want {
		t.Fatalf("keys without a setting:\n got  %s\n want %s", got.Canonical(), want.Canonical())
	}
}
