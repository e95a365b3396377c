package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"umstore/backup"
	"umstore/internal/cli"
	"umstore/placement"
)

const restoreUsage = `Usage: umstored restore --from DIR --deployment FILE --host NAME --data-dir DIR

Lays out the stores that the deployment places on host NAME from the backup
in DIR (taken with umstored backup), so that umstored run starts each group
with the backed-up state. The deployment may be the one backed up or a new
one (other addresses and ports), with the same groups. Run it on every host
of the deployment, with umstored stopped there, before starting any: each
group's members must all hold the restored state (a group never starts with
some stores restored and others empty or old).

The backup is verified first (as umstored backup --verify does), and a
damaged one is refused before anything is written. A data directory that
already holds a store's state is never overwritten: move it aside first.

Restored groups know they were restored: each gets a new group identity,
the same on every host, that names the identity it came from. A restored
store refuses to start among stores that still hold the old identity, so a
backup can never be merged with the groups it was taken from. Publishers
resume after the highest sequence number the backup holds of their source.

Flags:
`

func cmdRestore(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("restore", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup `DIR` (required)")
	deployment := fs.String("deployment", "", "deployment `FILE` to restore into (required)")
	host := fs.String("host", "", "this host's `NAME` in the deployment (required)")
	dataDir := fs.String("data-dir", "", "the data `DIR` umstored run is given (required)")
	logStore := fs.String("log-store", "", "the raft log the stores keep, as umstored run --log-store (default: run's default)")
	fs.Usage = func() { fmt.Fprint(stderr, restoreUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *from == "" || *deployment == "" || *host == "" || *dataDir == "" {
		return cli.UsageError(stderr, "umstored restore", "--from, --deployment, --host and --data-dir are required")
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored restore:", err)
		return 2
	}
	stores, err := backup.RestoreHost(*from, d, *host, *dataDir, *logStore)
	for _, s := range stores {
		fmt.Fprintf(stdout, "restored %s (group %d) at applied index %d into %s: group identity %s (restored from %s)\n", s.Store, s.Group, s.AppliedIndex, s.DataDir, s.GroupID, s.From)
	}
	if err != nil {
		fmt.Fprintln(stderr, "umstored restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "host %s restored; restore every other host of the deployment from the same backup, then start umstored run on each\n", *host)
	return 0
}
