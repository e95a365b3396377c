package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"umstore/internal/cli"
	"umstore/internal/groupclient"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

const statusUsage = `Usage: umstored status --deployment FILE [--json]

Asks every store of the deployment what it holds and prints, per group, its
leader and each store's state:
  leader       leads its group
  up           a follower that is up to date
  catching-up  rejoined empty and not caught up yet, or far behind its leader
  empty        running, with no state yet (deciding whether to bootstrap,
               or waiting for its turn to catch up)
  starting     running with state, raft not started yet
  failed       stopped itself (see its log)
  refused      an empty store whose group has no store with state while
               another group remembers it: see umstored recover --help
  down         did not answer
and whether publishing is possible under the deployment's intergroup
behaviour. Exits 0 if publishing is possible, 1 if not, 2 on bad usage.

Flags:
`

// catchingUpLag is how many entries behind its leader a follower may be
// before status calls it catching up.
const catchingUpLag = 1000

type storeState struct {
	Name         string `json:"name"`
	Host         string `json:"host"`
	Address      string `json:"address"`
	State        string `json:"state"`
	AppliedIndex uint64 `json:"applied_index"`
	GroupID      string `json:"group_id,omitempty"`
	Error        string `json:"error,omitempty"`
}

type groupState struct {
	Index   int           `json:"index"`
	Leader  string        `json:"leader"`
	Stores  []storeState  `json:"stores"`
	Sources []sourceState `json:"sources"` // as the leader holds them
}

type sourceState struct {
	Name    string `json:"name"`
	HighSeq uint64 `json:"high_seq"`
	LowSeq  uint64 `json:"oldest_seq"`
	Count   uint64 `json:"count"`
	Gaps    int    `json:"gaps"`
}

type deploymentState struct {
	Deployment string       `json:"deployment"`
	Intergroup string       `json:"intergroup"`
	Groups     []groupState `json:"groups"`
	Publishing bool         `json:"publishing"`
	Reason     string       `json:"reason"`
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment file (required)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for each store")
	fs.Usage = func() { fmt.Fprint(stderr, statusUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitUsage(err)
	}
	if *deployment == "" {
		fmt.Fprintln(stderr, "umstored status: --deployment is required")
		return 2
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored status:", err)
		return 2
	}
	st := probeDeployment(d, *timeout)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		_ = enc.Encode(st)
	} else {
		printStatus(stdout, st)
	}
	if !st.Publishing {
		return 1
	}
	return 0
}

func probeDeployment(d *placement.Deployment, timeout time.Duration) deploymentState {
	st := deploymentState{Deployment: d.Name, Intergroup: d.Stability.Intergroup}
	dialer := &wire.Dialer{Client: "umstored status", Timeout: timeout}
	if tlsCfg, token, err := cli.ClientSecurity(d, cli.SecurityFlags{}); err == nil {
		dialer.TLS, dialer.Token = tlsCfg, token
	}
	withLeader := 0
	for _, g := range d.Groups {
		refs := d.Members(g.Index)
		gs := groupState{Index: g.Index, Stores: make([]storeState, len(refs))}
		replies := make([]*wire.ProbeReply, len(refs))
		var wg sync.WaitGroup
		for i, ref := range refs {
			gs.Stores[i] = storeState{Name: ref.Store.Name, Host: ref.Host.Name, Address: ref.ClientAddr()}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				rep, err := storegroup.ProbeStore(ctx, ref.ClientAddr(), dialer)
				if err != nil {
					gs.Stores[i].State, gs.Stores[i].Error = "down", err.Error()
					return
				}
				replies[i] = rep
			}()
		}
		wg.Wait()
		var leaderApplied uint64
		for i, rep := range replies {
			if rep != nil && rep.State == "Leader" {
				gs.Leader = rep.Store
				leaderApplied = replies[i].AppliedIndex
			}
		}
		for i, rep := range replies {
			if rep == nil {
				continue
			}
			s := &gs.Stores[i]
			s.AppliedIndex, s.GroupID = rep.AppliedIndex, rep.GroupID
			switch {
			case rep.State == "Leader":
				s.State = "leader"
			case rep.State == "failed" || rep.State == "refused":
				s.State = rep.State
			case rep.CatchingUp:
				s.State = "catching-up"
			case !rep.HasState:
				s.State = "empty"
			case rep.State == "starting":
				s.State = "starting"
			case gs.Leader != "" && rep.AppliedIndex+catchingUpLag < leaderApplied:
				s.State = "catching-up"
			default:
				s.State = "up"
			}
		}
		if gs.Leader != "" {
			withLeader++
			for i, rep := range replies {
				if rep != nil && rep.State == "Leader" {
					gs.Sources = leaderSources(refs[i].ClientAddr(), dialer, timeout)
				}
			}
		}
		st.Groups = append(st.Groups, gs)
	}
	n := len(d.Groups)
	switch d.Stability.Intergroup {
	case placement.IntergroupAll:
		st.Publishing = withLeader == n
	case placement.IntergroupMajority:
		st.Publishing = withLeader > n/2
	default:
		st.Publishing = withLeader >= 1
	}
	st.Reason = fmt.Sprintf("%d of %d groups have a leader; intergroup %s needs %s", withLeader, n, d.Stability.Intergroup, needText(d.Stability.Intergroup, n))
	return st
}

// leaderSources asks a group's leader for its sources (nil on failure).
func leaderSources(addr string, d *wire.Dialer, timeout time.Duration) []sourceState {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := groupclient.New(0, []string{addr}, d)
	defer c.Close()
	list, err := c.Sources(ctx)
	if err != nil {
		return nil
	}
	out := make([]sourceState, len(list.Sources))
	for i, s := range list.Sources {
		out[i] = sourceState{Name: s.Name, HighSeq: s.HighSeq, LowSeq: s.LowSeq, Count: s.Count, Gaps: len(s.Gaps)}
	}
	return out
}

func needText(behaviour string, n int) string {
	switch behaviour {
	case placement.IntergroupAll:
		return fmt.Sprintf("all %d", n)
	case placement.IntergroupMajority:
		return fmt.Sprintf("%d", n/2+1)
	default:
		return "at least 1"
	}
}

func printStatus(w io.Writer, st deploymentState) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "GROUP\tSTORE\tHOST\tADDRESS\tSTATE\tAPPLIED\n")
	for _, g := range st.Groups {
		for _, s := range g.Stores {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\n", g.Index, s.Name, s.Host, s.Address, s.State, s.AppliedIndex)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, g := range st.Groups {
		leader := g.Leader
		if leader == "" {
			leader = "none (no quorum, or an election is under way)"
		}
		fmt.Fprintf(w, "group %d leader: %s\n", g.Index, leader)
	}
	printed := false
	for _, g := range st.Groups {
		for _, src := range g.Sources {
			if !printed {
				fmt.Fprintln(w)
				tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "GROUP\tSOURCE\tHIGHEST\tOLDEST\tMESSAGES\tGAPS\n")
				printed = true
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\n", g.Index, src.Name, src.HighSeq, src.LowSeq, src.Count, src.Gaps)
		}
	}
	if printed {
		tw.Flush()
		fmt.Fprintln(w)
	}
	verdict := "publishing: possible"
	if !st.Publishing {
		verdict = "publishing: NOT possible"
	}
	fmt.Fprintf(w, "%s (%s)\n", verdict, st.Reason)
}
