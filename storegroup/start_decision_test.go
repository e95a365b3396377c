package storegroup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"umstore/placement"
	"umstore/wire"
)

// TestStartDecisionScenarios drives the bootstrap decision of an empty
// store (startInput.decide) from testdata/bootstrap/decide.txt, one probing
// round per case, as decideStart runs it: the group's other members first,
// then, only if the decision asks, the other groups' stores. A case reads
//
//	decide self=G1S1 members=(G1S1,G1S2,G1S3) [group=1] [preferred=(G1S1,G1S2)] [accept-loss]
//	G1S2 state term=3 index=120 [leader]
//	G1S3 silent
//	other G2S1 empty knows=(1:id1)
//
// one answer per line: silent (no answer), empty, or state; a store with
// state reports its last log position (term, index; none means index 0),
// and any store the group identities it remembers (knows=group:id,...).
//
// Rewrite the expected outputs with
// `go test ./storegroup -run StartDecisionScenarios -rewrite`.
func TestStartDecisionScenarios(t *testing.T) {
	t.Parallel()
	datadriven.RunTest(t, "../testdata/bootstrap/decide.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "decide" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		in := startInput{group: 1}
		d.ScanArgs(t, "self", &in.self)
		d.ScanArgs(t, "members", &in.order)
		d.MaybeScanArgs(t, "group", &in.group)
		d.MaybeScanArgs(t, "preferred", &in.preferred)
		acceptLoss := d.HasArg("accept-loss")
		var others []memberAnswer
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			fields := strings.Fields(line)
			other := fields[0] == "other"
			if other {
				fields = fields[1:]
			}
			a, err := parseAnswer(fields)
			if err != nil {
				d.Fatalf(t, "%q: %v", line, err)
			}
			if other {
				others = append(others, a)
			} else {
				in.members = append(in.members, a)
			}
		}

		var out strings.Builder
		dec := in.decide()
		if dec.kind == startAskOtherGroups {
			out.WriteString("asks the other groups\n")
			in.others, in.othersAsked, in.acceptLoss = others, true, acceptLoss
			dec = in.decide()
		}
		if dec.kind == startRefuse && !errors.Is(dec.err, placement.ErrNoStoreWithState) {
			d.Fatalf(t, "the refusal %v does not match placement.ErrNoStoreWithState", dec.err)
		}
		out.WriteString(describeDecision(dec))
		return out.String()
	})
}

// parseAnswer reads "NAME silent|empty|state [term=N] [index=N] [leader]
// [knows=G:ID,...]".
func parseAnswer(fields []string) (memberAnswer, error) {
	if len(fields) < 2 {
		return memberAnswer{}, errors.New("want a store name and silent, empty or state")
	}
	a := memberAnswer{name: fields[0]}
	rep := &wire.ProbeReply{Store: fields[0], State: "Follower"}
	switch fields[1] {
	case "silent":
		a.err = errors.New("connection refused")
		return a, nil
	case "empty":
		rep.State = "starting"
	case "state":
		rep.HasState = true
	default:
		return a, fmt.Errorf("unknown answer %q", fields[1])
	}
	for _, f := range fields[2:] {
		key, val, _ := strings.Cut(f, "=")
		var err error
		switch key {
		case "leader":
			rep.State = "Leader"
		case "term":
			rep.LastTerm, err = strconv.ParseUint(val, 10, 64)
		case "index":
			rep.LastIndex, err = strconv.ParseUint(val, 10, 64)
		case "knows":
			for _, k := range strings.Split(strings.Trim(val, "()"), ",") {
				g, id, _ := strings.Cut(k, ":")
				var n int
				if n, err = strconv.Atoi(g); err != nil {
					break
				}
				rep.KnownGroups = append(rep.KnownGroups, wire.GroupIdentity{Index: n, GroupID: id})
			}
		default:
			err = fmt.Errorf("unknown field %q", f)
		}
		if err != nil {
			return a, fmt.Errorf("%s: %w", f, err)
		}
	}
	a.reply = rep
	return a, nil
}

func describeDecision(d startDecision) string {
	var b strings.Builder
	if d.err != nil && d.kind != startRefuse {
		fmt.Fprintf(&b, "accepts the loss: %v\n", d.err)
	}
	switch d.kind {
	case startBootstrap:
		b.WriteString("bootstrap\n")
	case startJoinNew:
		fmt.Fprintf(&b, "join-new bootstrapper=%s\n", d.from)
	case startJoinExisting:
		by := "the most up-to-date member"
		if d.leader {
			by = "the leader"
		}
		fmt.Fprintf(&b, "join-existing from=%s (%s) target=%s\n", d.from, by, d.target)
	case startWait:
		fmt.Fprintf(&b, "wait silent=%s", strings.Join(d.silent, ","))
		if d.from != "" {
			fmt.Fprintf(&b, " has-state=%s", d.from)
		}
		fmt.Fprintf(&b, "\nwhy: %s\n", d.why)
	case startRefuse:
		fmt.Fprintf(&b, "refuse: %v\n", d.err)
	default:
		fmt.Fprintf(&b, "unexpected decision %d\n", d.kind)
	}
	if d.stateSeen {
		b.WriteString("a member with state answered: any refusal ends\n")
	}
	return b.String()
}
