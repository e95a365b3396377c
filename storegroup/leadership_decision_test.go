package storegroup

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestLeadershipScenarios drives leader placement's decision
// (moveInput.decide) from testdata/leadership/move.txt. A case reads
//
//	decide self=G1S3 preferred=(G1S1,G1S2) [settle=5s] [min-interval=30s] [moved-ago=10s]
//	G1S1 caught-up-for=6s applied=120
//	G1S2 down
//
// one line per other member: how long it has been up and caught up, or
// down (not caught up). The output is the decision: "move to NAME" or
// "stay", and why.
//
// Rewrite the expected outputs with
// `go test ./storegroup -run LeadershipScenarios -rewrite`.
func TestLeadershipScenarios(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	datadriven.RunTest(t, "../testdata/leadership/move.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "decide" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		in := moveInput{now: now, host: "A", settle: 5 * time.Second, minInterval: 30 * time.Second, members: map[string]memberState{}}
		d.ScanArgs(t, "self", &in.self)
		if d.HasArg("preferred") {
			d.ScanArgs(t, "preferred", &in.preferred)
		}
		dur := func(key string, into *time.Duration) {
			if !d.HasArg(key) {
				return
			}
			var s string
			d.ScanArgs(t, key, &s)
			v, err := time.ParseDuration(s)
			if err != nil {
				d.Fatalf(t, "%s: %v", key, err)
			}
			*into = v
		}
		dur("settle", &in.settle)
		dur("min-interval", &in.minInterval)
		var ago time.Duration
		if d.HasArg("moved-ago") {
			dur("moved-ago", &ago)
			in.lastMove = now.Add(-ago)
		}
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			var st memberState
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "down":
				case "caught-up-for":
					dd, err := time.ParseDuration(v)
					if err != nil {
						d.Fatalf(t, "%q: %v", line, err)
					}
					st.caughtUpSince = now.Add(-dd)
				case "applied":
					var n uint64
					for _, c := range v {
						n = n*10 + uint64(c-'0')
					}
					st.applied = n
				default:
					d.Fatalf(t, "%q: unknown %q", line, kv)
				}
			}
			in.members[f[0]] = st
		}
		dec := in.decide()
		if dec.target != "" {
			return "move to " + dec.target + ": " + dec.why + "\n"
		}
		return "stay: " + dec.why + "\n"
	})
}
