package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"umstore/deploystatus"
	"umstore/internal/cli"
	"umstore/placement"
)

const statusUsage = `Usage: umstored status --deployment FILE [--json]

Asks every store of the deployment what it holds and prints, per group, its
leader and each store's state:
  leader       leads its group
  up           a follower that is up to date
  candidate    asks for votes: its group has no leader it can reach
  catching-up  rejoined empty and not caught up yet, or far behind its leader
  empty        running, with no state yet (deciding whether to bootstrap,
               or waiting for its turn to catch up)
  starting     running with state, raft not started yet
  stopped      raft has shut down (the store is stopping)
  failed       stopped itself (see its log)
  refused      an empty store whose group has no store with state while
               another group remembers it: see umstored recover --help
  down         did not answer
each source's named receivers (the last message consumed, the lag, whether
active and paced, the last activity), and whether publishing is possible
under the deployment's intergroup behaviour. Each group's leader line says
which host it runs on and whether that is the group's preferred host (the
one holding its majority, where leadership moves once a store there has
caught up). Stores that run another policy than the deployment file's are
named, with what differs. Exits 0 if publishing is possible, 1 if not, 2 on
bad usage.

Flags:
`

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment file (required)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for each store")
	fs.Usage = func() { fmt.Fprint(stderr, statusUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *deployment == "" {
		return cli.UsageError(stderr, "umstored status", "--deployment is required")
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored status:", err)
		return 2
	}
	dialer := deploystatus.Dialer(d, "umstored status", *timeout)
	// The round's time: the probes, then the leaders' sources.
	st := deploystatus.Probe(d, dialer, deploystatus.Limits{ProbeTimeout: *timeout, RoundTimeout: 2 * *timeout}).Summary()
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

// placementNote says where a group's leader runs against its preferred
// host: "" when neither is known.
func placementNote(g deploystatus.SummaryGroup) string {
	switch {
	case g.LeaderHost == "":
		return ""
	case g.PreferredHost == "":
		return fmt.Sprintf(" on host %s", g.LeaderHost)
	case g.LeaderHost == g.PreferredHost:
		return fmt.Sprintf(" on host %s, its preferred host", g.LeaderHost)
	}
	return fmt.Sprintf(" on host %s, not its preferred host %s (%s)", g.LeaderHost, g.PreferredHost, g.Placement)
}

// printStatus prints the summary as tables. What the stores said about
// themselves (source names, a leader's address) is printed through
// cli.Printable, so it cannot move the cursor or forge a row.
func printStatus(w io.Writer, st deploystatus.Summary) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "GROUP\tSTORE\tHOST\tADDRESS\tSTATE\tAPPLIED\tLAST STOP\tLEVEL\tVERSION\n")
	var catching []deploystatus.SummaryStore
	for _, g := range st.Groups {
		for _, s := range g.Stores {
			addr := s.Address
			if s.MovedFrom != "" {
				addr += " (moved from " + s.MovedFrom + ")"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", g.Index, s.Name, s.Host, cli.Printable(addr), s.State, s.AppliedIndex, orDash(cli.Printable(s.LastStop)),
				levelText(s.FormatLevel), versionText(s))
			if s.CatchingUp {
				catching = append(catching, s)
			}
		}
	}
	tw.Flush()
	for _, s := range catching {
		fmt.Fprintf(w, "%s catching up: %s\n", s.Name, catchUpText(s))
	}
	fmt.Fprintln(w)
	for _, g := range st.Groups {
		leader := g.Leader
		if leader == "" {
			leader = "none (no quorum, or an election is under way)"
		}
		fmt.Fprintf(w, "group %d leader: %s%s\n", g.Index, cli.Printable(leader), placementNote(g))
		if g.ActiveLevel > 0 {
			fmt.Fprintf(w, "group %d format level: %d%s\n", g.Index, g.ActiveLevel, levelHeldText(g.LevelHeldBy))
		}
		if g.Confirms != nil && !*g.Confirms && g.Leader != "" {
			fmt.Fprintf(w, "group %d confirms nothing: intragroup %s needs every store of the group running\n", g.Index, st.Intragroup)
		}
	}
	printed := false
	for _, g := range st.Groups {
		for _, src := range g.Sources {
			if !printed {
				fmt.Fprintln(w)
				tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "GROUP\tSOURCE\tHIGHEST\tOLDEST\tMESSAGES\tGAPS\tCONFLICTS\n")
				printed = true
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\n", g.Index, cli.Printable(src.Name), src.HighSeq, src.LowSeq, src.Count, src.Gaps, src.Conflicts)
		}
	}
	if printed {
		tw.Flush()
		for _, g := range st.Groups {
			if g.SourcesTotal > len(g.Sources) {
				fmt.Fprintf(w, "group %d: %d of its %d sources listed (those with messages first); /v1/status of a store says the same\n", g.Index, len(g.Sources), g.SourcesTotal)
			}
		}
		fmt.Fprintln(w)
	}
	printConflicts(w, st)
	printReceivers(w, st)
	for _, m := range st.PolicyMismatch {
		fmt.Fprintf(w, "policy: %s (runs another policy than this deployment file: a flag of its daemon overrides it, or its host has another file)\n", cli.Printable(m))
	}
	verdict := "publishing: possible"
	if !st.Publishing {
		verdict = "publishing: NOT possible"
	}
	fmt.Fprintf(w, "%s (%s)\n", verdict, st.Reason)
}

// printConflicts says, once per source, that groups hold different
// payloads for some of its sequence numbers, and what receivers get.
func printConflicts(w io.Writer, st deploystatus.Summary) {
	for _, g := range st.Groups {
		for _, src := range g.Sources {
			if src.Conflicts > 0 {
				fmt.Fprintf(w, "CONSISTENCY VIOLATION: group %d's leader found %d sequence number(s) of source %s that another group holds with another payload; neither copy is changed, receivers get the payload of the lowest group index that holds it (docs/receivers.md)\n",
					g.Index, src.Conflicts, cli.Printable(src.Name))
			}
		}
	}
}

// catchUpText is a catching-up store's progress for people: entries
// applied of the target, and the bytes received from its group.
func catchUpText(s deploystatus.SummaryStore) string {
	if s.CatchUpTarget == 0 {
		return fmt.Sprintf("applied %d, %s received", s.AppliedIndex, mib(s.CatchUpBytes))
	}
	return fmt.Sprintf("applied %d of %d entries (%d%%), %s received", s.AppliedIndex, s.CatchUpTarget, 100*min(s.AppliedIndex, s.CatchUpTarget)/s.CatchUpTarget, mib(s.CatchUpBytes))
}

// mib writes a byte count in MiB with one decimal.
// levelText is a store's format level for the table: "-" when it did
// not answer.
func levelText(level int) string {
	if level == 0 {
		return "-"
	}
	return fmt.Sprint(level)
}

// versionText is a store's binary for the table: a store that answers
// without saying runs a release older than the field (v0.1.0).
func versionText(s deploystatus.SummaryStore) string {
	switch {
	case s.Version != "":
		// "v1.2.3 (commit 0123456789ab, ...)": the release and the commit.
		v := strings.Fields(s.Version)[0]
		if _, rest, ok := strings.Cut(s.Version, "commit "); ok {
			v += " " + strings.TrimRight(strings.Fields(rest)[0], ",)")
		}
		return cli.Printable(v)
	case s.FormatLevel == 1:
		return "v0.1.0 or older"
	}
	return "-"
}

// levelHeldText says what keeps a group's level below its leader's.
func levelHeldText(held []string) string {
	if len(held) == 0 {
		return ""
	}
	return " (not raised: " + cli.Printable(strings.Join(held, "; ")) + "; finish the upgrade, docs/operations.md)"
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
