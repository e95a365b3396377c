package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/pflag"

	"umstore/backup"
	"umstore/deploystatus"
	"umstore/internal/cli"
	"umstore/placement"
)

const backupUsage = `Usage: umstored backup --deployment FILE --out DIR
       umstored backup --verify DIR

Takes an online backup of every group of a running deployment: each group's
leader sends a copy of its repository taken at one applied index while
publishing goes on (a consistent prefix of what the group holds). DIR gets
one file per group (group-N.umsnap) and manifest.json: each group's identity
and applied index, its sources with their highest and oldest sequence
numbers, its durable receivers' positions, the deployment's policy, the
binary that took it, and each file's size and SHA-256. Progress goes to
stderr. DIR must be new or empty; the manifest is written last, so a
directory without one is not a backup.

Taking a backup is an operator's action: with security.operator-token-file
in the deployment, the leaders send a copy only for a request with that
token (read from the deployment's file, or --operator-token-file); without
one, the deployment's client token, or from loopback in a deployment with
no token at all.

--verify DIR checks a backup without any store: the manifest, each file's
size and SHA-256, and that each file decodes as a repository standing for
the manifest's applied index. It exits 1 naming the first damaged or
missing file. umstored restore verifies the same way before it writes.

Flags:
`

func cmdBackup(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("backup", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` of the running deployment")
	out := fs.String("out", "", "write the backup into `DIR` (new or empty)")
	verify := fs.String("verify", "", "check the backup in `DIR` instead of taking one")
	timeout := fs.Duration("timeout", 30*time.Second, "give up on a copy when its leader sends nothing for this long")
	operatorFile := fs.String("operator-token-file", "", "send the operator token in this `FILE` (default: the deployment's security.operator-token-file)")
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *verify != "" {
		if *deployment != "" || *out != "" {
			return cli.UsageError(stderr, "umstored backup", "--verify takes no --deployment or --out")
		}
		m, err := backup.Verify(*verify)
		if err != nil {
			fmt.Fprintln(stderr, "umstored backup --verify:", err)
			return 1
		}
		printManifest(stdout, "backup "+*verify+" is intact", m)
		return 0
	}
	if *deployment == "" || *out == "" {
		return cli.UsageError(stderr, "umstored backup", "--deployment and --out are required (or --verify DIR)")
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored backup:", err)
		return 2
	}
	token, err := cli.OperatorToken(d, *operatorFile)
	if err != nil {
		fmt.Fprintln(stderr, "umstored backup:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := backup.Options{Dialer: deploystatus.Dialer(d, "umstored backup", 5*time.Second), OperatorToken: token, Progress: stderr, Timeout: *timeout}
	m, err := backup.Take(ctx, d, *out, opts)
	if err != nil {
		fmt.Fprintln(stderr, "umstored backup:", err)
		return 1
	}
	printManifest(stdout, "backup written to "+*out, m)
	return 0
}

// printManifest tells what a backup holds, a line per group.
func printManifest(w io.Writer, title string, m *backup.Manifest) {
	fmt.Fprintf(w, "%s (deployment %s, taken %s by umstored %s)\n", title, m.Deployment, m.Taken, m.Binary)
	for _, g := range m.Groups {
		var msgs uint64
		for _, s := range g.Sources {
			msgs += s.Count
		}
		fmt.Fprintf(w, "  group %d  %s  applied index %d  %d sources  %d messages  %s\n", g.Index, g.GroupID, g.AppliedIndex, len(g.Sources), msgs, g.File)
	}
}
