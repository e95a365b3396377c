package quorum

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestNeededScenarios drives the intergroup rule from
// testdata/quorum/intergroup.txt. Each case names a behaviour, the
// configured and active groups, and lists how many holding groups to try:
//
//	rule behavior=majority configured=3 active=2 holding=(1,2,3)
//
// Rewrite the expected outputs with `go test ./quorum -run Scenarios -rewrite`.
func TestNeededScenarios(t *testing.T) {
	datadriven.RunTest(t, "../testdata/quorum/intergroup.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "rule" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var name string
		var configured, active int
		var holding []string
		d.ScanArgs(t, "behavior", &name)
		d.ScanArgs(t, "configured", &configured)
		d.ScanArgs(t, "active", &active)
		d.ScanArgs(t, "holding", &holding)
		b, err := ParseBehavior(name)
		if err != nil {
			return err.Error() + "\n"
		}
		var out strings.Builder
		fmt.Fprintf(&out, "needed %d (%s)\n", b.Needed(configured, active), b.NeededText(configured))
		for _, h := range holding {
			var n int
			if _, err := fmt.Sscan(h, &n); err != nil {
				d.Fatalf(t, "holding %q: %v", h, err)
			}
			fmt.Fprintf(&out, "holding %d: met=%t\n", n, b.Met(n, configured, active))
		}
		return out.String()
	})
}
