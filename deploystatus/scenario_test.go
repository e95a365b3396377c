package deploystatus

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"umstore/storegroup"
	"umstore/wire"
)

// TestViewScenarios drives the classification of stores, groups and
// publishing from testdata/deploystatus/view.txt. Each case builds the
// view of the dev topology (hosts A: G1S1 G1S2 G2S1, B: G1S3 G2S2 G2S3)
// from one line per store that answered:
//
//	view intergroup=majority intragroup=all local=A
//	G1S1 Leader state applied=5000
//	G1S2 Follower state applied=3000
//	G2S1 starting waiting
//
// A line names the store, its own raft state word, and the flags state
// (has state), catching (catching up), waiting (waits to join; only for a
// store of a local host), applied=N and last=N. A store without a line
// did not answer. Stores of the hosts named by local= are read from their
// status, the others from probe replies.
//
// Rewrite the expected outputs with
// `go test ./deploystatus -run Scenarios -rewrite`.
func TestViewScenarios(t *testing.T) {
	datadriven.RunTest(t, "../testdata/deploystatus/view.txt", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "view" {
			td.Fatalf(t, "unknown command %q", td.Cmd)
		}
		d := twoHosts(t)
		if td.HasArg("intergroup") {
			td.ScanArgs(t, "intergroup", &d.Stability.Intergroup)
		}
		if td.HasArg("intragroup") {
			td.ScanArgs(t, "intragroup", &d.Stability.Intragroup)
		}
		var localHosts []string
		if td.HasArg("local") {
			td.ScanArgs(t, "local", &localHosts)
		}
		var local []storegroup.Status
		remote := Round{Stores: map[string]ProbeResult{}}
		for _, ref := range d.Stores() {
			remote.Stores[ref.Store.Name] = ProbeResult{Err: errors.New("connection refused")}
		}
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				td.Fatalf(t, "line %q: want NAME RAFTSTATE [flags]", line)
			}
			ref, ok := d.StoreByName(f[0])
			if !ok {
				td.Fatalf(t, "no store %s", f[0])
			}
			st := storegroup.Status{Name: f[0], Group: ref.Group, State: f[1]}
			for _, flag := range f[2:] {
				key, val, _ := strings.Cut(flag, "=")
				n, _ := strconv.ParseUint(val, 10, 64)
				switch key {
				case "state":
					st.HasState = true
				case "catching":
					st.CatchingUp = true
				case "waiting":
					st.WaitingToJoin = true
				case "applied":
					st.AppliedIndex = n
				case "last":
					st.LastIndex = n
				default:
					td.Fatalf(t, "line %q: unknown flag %q", line, flag)
				}
			}
			isLocal := false
			for _, h := range localHosts {
				isLocal = isLocal || ref.Host.Name == h
			}
			if isLocal {
				local = append(local, st)
				delete(remote.Stores, st.Name)
				continue
			}
			remote.Stores[st.Name] = ProbeResult{Reply: &wire.ProbeReply{Store: st.Name, Group: st.Group, State: st.State,
				HasState: st.HasState, CatchingUp: st.CatchingUp, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex}}
		}
		v := Build(d, nil, localHosts, local, remote, time.Now())

		var out strings.Builder
		for _, g := range v.Groups {
			leader := g.Leader
			if leader == "" {
				leader = "none"
			}
			confirms := ""
			if g.Confirms != nil {
				confirms = fmt.Sprintf(", confirms under intragroup %s: %t", v.Intragroup, *g.Confirms)
			}
			fmt.Fprintf(&out, "group %d: leader %s, %d of %d running (quorum %d)%s\n", g.Index, leader, g.Running, len(g.Stores), g.Quorum, confirms)
			for _, name := range g.Stores {
				for _, s := range v.Stores {
					if s.Name == name {
						fmt.Fprintf(&out, "  %s %s\n", s.Name, s.State)
					}
				}
			}
		}
		for _, h := range v.Hosts {
			fmt.Fprintf(&out, "host %s: %s\n", h.Name, h.State)
		}
		fmt.Fprintf(&out, "publishing %t: %s\n", v.Publishing, v.Reason)
		return out.String()
	})
}
