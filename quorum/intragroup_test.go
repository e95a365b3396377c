package quorum

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestIntragroupScenarios drives the intragroup rule from
// testdata/quorum/intragroup.txt. Each case names a behaviour and the
// group's stores, each as what the leader knows of it for one message:
// H running and holding it, R running without it, D down without it, DH
// down (not heard from lately) but holding it.
//
//	rule behavior=all-active stores=(H,H,R)
//
// Rewrite the expected outputs with `go test ./quorum -run Intragroup -rewrite`.
func TestIntragroupScenarios(t *testing.T) {
	datadriven.RunTest(t, "../testdata/quorum/intragroup.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "rule" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var name string
		var stores []string
		d.ScanArgs(t, "behavior", &name)
		d.ScanArgs(t, "stores", &stores)
		b, err := ParseIntragroupBehavior(name)
		if err != nil {
			return err.Error() + "\n"
		}
		members := make([]Member, len(stores))
		running := 0
		for i, s := range stores {
			switch s {
			case "H":
				members[i] = Member{Running: true, Holds: true}
			case "R":
				members[i] = Member{Running: true}
			case "D":
			case "DH":
				members[i] = Member{Holds: true}
			default:
				d.Fatalf(t, "store %q: want H, R, D or DH", s)
			}
			if members[i].Running {
				running++
			}
		}
		var out strings.Builder
		fmt.Fprintf(&out, "needed %d (%s); confirms new messages: %t\n", b.Needed(len(members), running), b.NeededText(len(members)), b.Confirms(len(members), running))
		fmt.Fprintf(&out, "met=%t\n", b.Met(members))
		return out.String()
	})
}
