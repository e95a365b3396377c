package publisher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"umstore/internal/groupclient"
	"umstore/quorum"
	"umstore/wire"
)

// TestResumeScenarios drives decideResume from testdata/resume/*.txt. A
// case names the intergroup behaviour and the number of groups, whether
// RegisterTimeout has passed and whether the caller's context has ended,
// and lists, one a line, what the groups said and the state file:
//
//	register behavior=majority groups=3 timeout=passed ctx=ended
//	answer group=2 high=300 low=1 id=g2
//	refused group=1
//	busy group=3
//	leaderless group=3 for=2500   (its stores have known no leader for 2,500 ms)
//	down group=1 (intragroup all, a store of the group down)
//	state last-stable=500 sent-up-to=600 group1=g1
//
// Lines are in the order the groups first reported. Every case is also
// decided with its replies in every other order, and must come out the
// same: the resume point may not depend on which group answered first.
//
// Rewrite the expected outputs with
// `go test ./publisher -run ResumeScenarios -rewrite`.
func TestResumeScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "../testdata/resume", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "register" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			in := scenarioInput(t, d)
			got := decideResume(in)
			for _, order := range permutations(in.replies) {
				other := in
				other.replies = order
				if o := decideResume(other); describeOutcome(o) != describeOutcome(got) {
					d.Fatalf(t, "the decision depends on the order of the answers:\n%s\nin the listed order, but\n%s\nwith the groups in the order %v", describeOutcome(got), describeOutcome(o), groupsOf(order))
				}
			}
			return describe(got)
		})
	})
}

// scenarioInput reads a case into a resumeInput.
func scenarioInput(t *testing.T, d *datadriven.TestData) resumeInput {
	in := resumeInput{source: "s"}
	var behavior, timeout, ctx string
	d.ScanArgs(t, "behavior", &behavior)
	d.ScanArgs(t, "groups", &in.groups)
	d.MaybeScanArgs(t, "timeout", &timeout)
	d.MaybeScanArgs(t, "ctx", &ctx)
	b, err := quorum.ParseBehavior(behavior)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	in.behavior = b
	switch timeout {
	case "", "running":
	case "passed":
		in.waitOver = true
	default:
		d.Fatalf(t, "timeout=%q: want running or passed", timeout)
	}
	switch ctx {
	case "", "live":
	case "ended":
		in.ended = context.DeadlineExceeded
	default:
		d.Fatalf(t, "ctx=%q: want live or ended", ctx)
	}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		kv := map[string]string{}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				d.Fatalf(t, "%q: want key=value", f)
			}
			kv[k] = v
		}
		num := func(key string) uint64 {
			if kv[key] == "" {
				return 0
			}
			n, err := strconv.ParseUint(kv[key], 10, 64)
			if err != nil {
				d.Fatalf(t, "%s=%q: %v", key, kv[key], err)
			}
			return n
		}
		group := int(num("group")) - 1
		switch fields[0] {
		case "answer":
			in.replies = append(in.replies, groupReply{group: group, answered: true, highSeq: num("high"), lowSeq: num("low"), groupID: kv["id"]})
		case "refused":
			in.replies = append(in.replies, groupReply{group: group, err: fmt.Errorf("group %d: no leader reachable: handshake with store: %w", group+1, wire.ErrUnauthorized)})
		case "down":
			in.replies = append(in.replies, groupReply{group: group, err: fmt.Errorf("%w: group %d: store G%dS1 of group %d does not complete the registration: G%dS3 is not running", ErrMembersDown, group+1, group+1, group+1, group+1)})
		case "busy":
			in.replies = append(in.replies, groupReply{group: group, err: fmt.Errorf("%w: held by session other", ErrSourceBusy)})
		case "leaderless":
			ll := &groupclient.LeaderlessError{Group: group + 1, For: time.Duration(num("for")) * time.Millisecond, Answered: 1}
			in.replies = append(in.replies, groupReply{group: group, err: fmt.Errorf("group %d: no leader reachable: %w", group+1, ll)})
		case "state":
			in.state = &stateFile{Source: "s", LastStable: num("last-stable"), SentUpTo: num("sent-up-to"), Groups: map[int]string{}}
			switch kv["settled"] {
			case "", "false":
			case "true":
				in.settled = true
			default:
				d.Fatalf(t, "settled=%q: want true or false", kv["settled"])
			}
			for k, v := range kv {
				if g, ok := strings.CutPrefix(k, "group"); ok {
					n, err := strconv.Atoi(g)
					if err != nil {
						d.Fatalf(t, "%s: want groupN=identity", k)
					}
					in.state.Groups[n] = v
				}
			}
		default:
			d.Fatalf(t, "unknown line %q: want answer, refused, down, busy, leaderless or state", line)
		}
	}
	return in
}

// describeOutcome is the decision itself: what must not depend on order.
func describeOutcome(d resumeDecision) string {
	switch {
	case d.err != nil:
		return "error: " + d.err.Error()
	case d.wait:
		return "wait for more answers"
	default:
		return fmt.Sprintf("resume at %d (highest held: %d)", d.seq, d.high)
	}
}

// describe is the decision and everything that comes with it.
func describe(d resumeDecision) string {
	var b strings.Builder
	b.WriteString(describeOutcome(d) + "\n")
	if d.err != nil {
		var is []string
		for _, e := range []struct {
			name string
			err  error
		}{{"ErrRegistration", ErrRegistration}, {"ErrUnauthorized", wire.ErrUnauthorized}, {"ErrSourceBusy", ErrSourceBusy}, {"DeadlineExceeded", context.DeadlineExceeded}, {"ErrSequenceExhausted", ErrSequenceExhausted}, {"ErrMembersDown", ErrMembersDown}} {
			if errors.Is(d.err, e.err) {
				is = append(is, e.name)
			}
		}
		fmt.Fprintf(&b, "is: %s\n", strings.Join(is, ", "))
	}
	if !d.wait && d.err == nil {
		fmt.Fprintf(&b, "answered: %v\n", d.answered)
	}
	if d.unused.From != 0 {
		fmt.Fprintf(&b, "skipped, declared never published once every group answers: %d-%d\n", d.unused.From, d.unused.To)
	}
	for _, w := range d.warnings {
		fmt.Fprintf(&b, "%s: %s", w.level, w.msg)
		for i := 0; i+1 < len(w.attrs); i += 2 {
			fmt.Fprintf(&b, " %v=%v", w.attrs[i], w.attrs[i+1])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// permutations returns every order of rs (rs has at most a handful).
func permutations(rs []groupReply) [][]groupReply {
	if len(rs) <= 1 {
		return [][]groupReply{rs}
	}
	var out [][]groupReply
	for i := range rs {
		rest := append(append([]groupReply(nil), rs[:i]...), rs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]groupReply{rs[i]}, p...))
		}
	}
	return out
}

func groupsOf(rs []groupReply) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.group + 1
	}
	return out
}
