package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

const stopUsage = `Usage: umstored stop --deployment FILE [--host NAME]

Stops every store of the deployment (or of one host) cleanly: each store
finishes what it applies, closes its files and marks itself clean, so its
next start needs no replay. Within each group the followers stop first and
the leader last. A host's daemon exits once all its stores have stopped.

Stopping is an operator's action: the stores accept it from a client with
the deployment's token, or, in a deployment without a token, from loopback
only.

Flags:
`

func cmdStop(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("stop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` (required)")
	only := fs.String("host", "", "stop only this host's stores")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for each store to stop")
	fs.Usage = func() { fmt.Fprint(stderr, stopUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitUsage(err)
	}
	if *deployment == "" {
		fmt.Fprintln(stderr, "umstored stop: --deployment is required")
		return 2
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
	dialer := &wire.Dialer{Client: "umstored stop", Timeout: 2 * time.Second}
	if tlsCfg, token, err := cli.ClientSecurity(d, cli.SecurityFlags{}); err == nil {
		dialer.TLS, dialer.Token = tlsCfg, token
	}
	code := 0
	for _, g := range d.Groups {
		for _, ref := range stopOrder(d, g.Index, dialer) {
			if *only != "" && ref.Host.Name != *only {
				continue
			}
			if err := stopStore(ref, dialer, *timeout); err != nil {
				fmt.Fprintf(stderr, "umstored stop: %s: %v\n", ref.Store.Name, err)
				code = 1
				continue
			}
			fmt.Fprintf(stdout, "stopped %s (group %d, host %s)\n", ref.Store.Name, ref.Group, ref.Host.Name)
		}
	}
	return code
}

// stopOrder lists a group's stores followers first, leader last.
func stopOrder(d *placement.Deployment, group int, dialer *wire.Dialer) []placement.StoreRef {
	refs := d.Members(group)
	leader := map[string]bool{}
	for _, ref := range refs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rep, err := storegroup.ProbeStore(ctx, ref.ClientAddr(), dialer)
		cancel()
		if err == nil && rep.State == "Leader" {
			leader[ref.Store.Name] = true
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return !leader[refs[i].Store.Name] && leader[refs[j].Store.Name] })
	return refs
}

// stopStore asks one store to stop and waits until it no longer answers.
// A store that is already down counts as stopped.
func stopStore(ref placement.StoreRef, dialer *wire.Dialer, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, _, err := dialer.Dial(ctx, ref.ClientAddr())
	if err != nil {
		return nil // not running
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	err = c.Send(&wire.Shutdown{ReqID: 1})
	var m wire.Message
	if err == nil {
		m, err = c.Read()
	}
	c.Close()
	if err != nil {
		return fmt.Errorf("asking it to stop: %w", err)
	}
	if e, ok := m.(*wire.Error); ok {
		return e
	}
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		_, err := storegroup.ProbeStore(pctx, ref.ClientAddr(), dialer)
		pcancel()
		if err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still running after %v", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
