package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"umstore/deploystatus"
	"umstore/deploystop"
	"umstore/internal/cli"
	"umstore/placement"
)

const stopUsage = `Usage: umstored stop --deployment FILE [--host NAME]

Stops every store of the deployment (or of one host) cleanly: each store
finishes what it applies, closes its files and marks itself clean, so its
next start needs no replay. Within each group the followers stop first and
the leader last. A host's daemon exits once all its stores have stopped.

Stopping is an operator's action. With security.operator-token-file in the
deployment, the stores stop only for a request with that token (read from
the deployment's file, or --operator-token-file); the client token no
longer suffices. Without it, they accept the deployment's client token
(security.token-file), and in a deployment with no token at all, a request
from loopback only. docs/security.md explains who holds which.

Flags:
`

func cmdStop(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("stop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` (required)")
	only := fs.String("host", "", "stop only this host's stores")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for each store to stop")
	operatorFile := fs.String("operator-token-file", "", "send the operator token in this `FILE` (default: the deployment's security.operator-token-file)")
	fs.Usage = func() { fmt.Fprint(stderr, stopUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *deployment == "" {
		return cli.UsageError(stderr, "umstored stop", "--deployment is required")
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored stop:", err)
		return 2
	}
	if *only != "" {
		if _, ok := d.HostByName(*only); !ok {
			fmt.Fprintf(stderr, "umstored stop: no host %q in the deployment\n", *only)
			return 2
		}
	}
	operatorToken, err := cli.OperatorToken(d, *operatorFile)
	if err != nil {
		fmt.Fprintln(stderr, "umstored stop:", err)
		return 2
	}
	dialer := deploystatus.Dialer(d, "umstored stop", 2*time.Second)
	v := deploystatus.Probe(d, dialer, deploystatus.Limits{ProbeTimeout: 2 * time.Second, RoundTimeout: 3 * time.Second, SkipSources: true})
	code := 0
	for _, ref := range deploystop.Order(d, v, *only) {
		if err := deploystop.Store(ref, dialer, operatorToken, *timeout); err != nil {
			fmt.Fprintf(stderr, "umstored stop: %s: %v\n", ref.Store.Name, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "stopped %s (group %d, host %s)\n", ref.Store.Name, ref.Group, ref.Host.Name)
	}
	return code
}
