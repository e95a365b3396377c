package receiver

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestResumeScenarios drives decideResume from
// testdata/receiver-resume/*.txt. A case names the consensus behaviour and
// the stores per group, and lists what each group said, one line each:
//
//	resume consensus=majority stores=3
//	group 1 registered consumed=1000
//	group 2 registered unknown
//	store group=1 name=G1S2 consumed=990
//	store group=2 name=G2S1 unknown
//	store group=1 name=G1S3 none
//
// "group N registered consumed=C" is the leader's answer to the
// registration (unknown: the group does not hold the source); "store"
// lines are one store's own record (none: it holds the source without a
// record of the receiver; unknown: it does not hold the source). Every
// case is also decided with its lines in every other order and must come
// out the same.
//
// Rewrite the expected outputs with
// `go test ./receiver -run ResumeScenarios -rewrite`.
func TestResumeScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "../testdata/receiver-resume", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "resume" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			in, lines := scenarioInput(t, d)
			got := describeResume(decideResume(in))
			for _, order := range permuteLines(lines) {
				again := inputFromLines(t, d, in.consensus, order)
				if o := describeResume(decideResume(again)); o != got {
					d.Fatalf(t, "the decision depends on the order of the answers:\n%s\nin the listed order, but\n%s\nin the order\n%s", got, o, strings.Join(order, "\n"))
				}
			}
			return got
		})
	})
}

func scenarioInput(t *testing.T, d *datadriven.TestData) (resumeInput, []string) {
	var name string
	d.ScanArgs(t, "consensus", &name)
	c, err := ParseConsensus(name)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			lines = append(lines, line)
		}
	}
	return inputFromLines(t, d, c, lines), lines
}

func inputFromLines(t *testing.T, d *datadriven.TestData, c Consensus, lines []string) resumeInput {
	stores := 3
	d.MaybeScanArgs(t, "stores", &stores)
	in := resumeInput{consensus: c}
	group := func(n int) *groupAnswers {
		for i := range in.groups {
			if in.groups[i].group == n {
				return &in.groups[i]
			}
		}
		in.groups = append(in.groups, groupAnswers{group: n, stores: stores})
		return &in.groups[len(in.groups)-1]
	}
	for _, line := range lines {
		f := strings.Fields(line)
		kv := map[string]string{}
		flags := map[string]bool{}
		for _, x := range f[1:] {
			if k, v, ok := strings.Cut(x, "="); ok {
				kv[k] = v
			} else {
				flags[x] = true
			}
		}
		num := func(s string) uint64 {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				d.Fatalf(t, "%q: %v", line, err)
			}
			return n
		}
		switch f[0] {
		case "group":
			if len(f) < 3 || f[2] != "registered" {
				d.Fatalf(t, "%q: want group N registered consumed=C|unknown", line)
			}
			g := group(int(num(f[1])))
			g.registered = true
			g.known = !flags["unknown"]
			if g.known {
				g.consumed = num(kv["consumed"])
			}
		case "store":
			g := group(int(num(kv["group"])))
			a := storeAnswer{store: kv["name"], known: !flags["unknown"]}
			if v, ok := kv["consumed"]; ok {
				a.consumed = num(v)
			}
			g.answers = append(g.answers, a)
		default:
			d.Fatalf(t, "unknown line %q: want group or store", line)
		}
	}
	return in
}

func describeResume(d resumeDecision) string {
	var b strings.Builder
	if d.consumed == 0 {
		b.WriteString("no position: start at the oldest retained message\n")
	} else {
		fmt.Fprintf(&b, "resume at %d (consumed %d)\n", d.consumed+1, d.consumed)
	}
	for _, c := range d.counted {
		fmt.Fprintf(&b, "counted %s\n", c)
	}
	for _, c := range d.ignored {
		fmt.Fprintf(&b, "ignored %s\n", c)
	}
	return b.String()
}

// permuteLines returns every order of lines (at most a handful), or, for
// longer cases, every rotation and its reverse.
func permuteLines(lines []string) [][]string {
	if len(lines) > 6 {
		var out [][]string
		for i := range lines {
			rot := append(append([]string(nil), lines[i:]...), lines[:i]...)
			rev := make([]string, len(rot))
			for j := range rot {
				rev[len(rot)-1-j] = rot[j]
			}
			out = append(out, rot, rev)
		}
		return out
	}
	if len(lines) <= 1 {
		return [][]string{lines}
	}
	var out [][]string
	for i := range lines {
		rest := append(append([]string(nil), lines[:i]...), lines[i+1:]...)
		for _, p := range permuteLines(rest) {
			out = append(out, append([]string{lines[i]}, p...))
		}
	}
	return out
}
