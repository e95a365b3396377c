package storehost

import (
	"testing"

	"umstore/placement"
)

// The policy digest the stores of a group compare, pinned for the same
// deployment files: a store of this version and one of the version before
// must agree on it, or every leader would report a mismatch after an
// upgrade. A file's keys left out take their defaults; a repair-rate of 0
// has always stood for the default rate, and the digest says so.
func TestPolicyDigestIsPinned(t *testing.T) {
	const head = "version: 1\nname: dev\nhosts:\n  - {name: A, address: 127.0.0.1}\n  - {name: B, address: 127.0.0.1}\ngroups:\n" +
		"  - index: 1\n    stores:\n      - {name: G1S1, host: A, raft-port: 14011, client-port: 15011}\n      - {name: G1S2, host: A, raft-port: 14012, client-port: 15012}\n      - {name: G1S3, host: B, raft-port: 14013, client-port: 15013}\n" +
		"  - index: 2\n    stores:\n      - {name: G2S1, host: A, raft-port: 14021, client-port: 15021}\n      - {name: G2S2, host: B, raft-port: 14022, client-port: 15022}\n      - {name: G2S3, host: B, raft-port: 14023, client-port: 15023}\n"
	for _, tc := range []struct {
		name, policy, digest string
	}{
		{"no policy section", "", "401611a2e28d"},
		{"retention and timeouts", "policy:\n  retention: {max-bytes: 0, max-messages: 1000, max-age: 1h}\n  source-activity-timeout: 10s\n  keepalive-interval: 2s\n", "60a57dccfcc7"},
		{"repair-rate 0", "policy:\n  repair-rate: 0\n", "401611a2e28d"},
		{"lease lock", "policy:\n  lock: {mode: lease, keepalive: 2s, acquire-interval: 5s}\n", "74112b4f1539"},
		{"flock with a keepalive", "policy:\n  lock: {mode: flock, keepalive: 3s}\n", "2c8d656680f9"},
		{"snapshots and leadership", "policy:\n  snapshot: {threshold: 64, interval: 1s, trailing-logs: 0}\n  leadership: {settle: 0s, min-interval: 1m}\n", "64e250f8fc63"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := placement.Parse([]byte(head+tc.policy), "deployment.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfgs, err := Configs(d, "A", t.TempDir(), BaseConfig(d.Policy))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cfgs {
				if c.PolicyDigest != tc.digest {
					t.Errorf("%s: digest %s, want %s (policy %s)", c.Name, c.PolicyDigest, tc.digest, c.Policy)
				}
			}
		})
	}
}
