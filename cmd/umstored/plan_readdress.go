package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"umstore/internal/atomicfile"
	"umstore/placement"
)

const readdressUsage = `Usage: umstored plan --deployment FILE --host NAME=NEW_ADDRESS [--out NEW_FILE] [--force] [--json]

Plans the replacement of a host by a server at another address, over a
running deployment: prints what changes (the host's address and its stores'
raft and client addresses; names, groups and ports stay) and writes the
deployment with the new address, keeping the rest of FILE as it is.

Then, with the old server stopped for good (its stores must never run
again at the old address):
  1. copy NEW_FILE and the member secret file beside it to the new server;
     the other hosts keep running with FILE;
  2. on the new server, start the host with an empty data directory:
       umstored run --deployment NEW_FILE --host NAME --data-dir DIR
     its stores tell their groups where they listen now (proved with the
     member secret); each group accepts them only if nothing answers as
     them at their old addresses, and records the new addresses; the
     empty stores catch up one per group at a time, before they may vote;
  3. umstored status --deployment NEW_FILE shows every store; with FILE it
     shows the host's stores at their new addresses, as moved;
  4. give every host and client NEW_FILE when convenient: the stores need
     no restart, and clients with FILE are redirected by the stores.
docs/operations.md ("Replacing a host") has the whole procedure.

Adding or removing a host or a group is not supported yet.

Flags:
`

// readdressOutput is what --json prints.
type readdressOutput struct {
	Deployment *placement.Deployment `json:"deployment"`
	Changes    []placement.Change    `json:"changes"`
	From       string                `json:"from"`
	File       string                `json:"file"`
}

// cmdPlanReaddress implements `umstored plan --deployment FILE --host NAME=ADDRESS`.
func cmdPlanReaddress(args []string, stdout, stderr io.Writer) int {
	flags := pflag.NewFlagSet("plan --deployment", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {}
	flags.SortFlags = false
	deployment := flags.String("deployment", "", "the running deployment's `FILE` (required)")
	var hostArgs []string
	flags.StringArrayVar(&hostArgs, "host", nil, "a host's new address, as `NAME=ADDRESS` (repeat for several hosts)")
	out := flags.StringP("out", "o", "", "`FILE` to write the changed deployment to (default: FILE itself, which needs --force)")
	force := flags.Bool("force", false, "replace an existing --out file, atomically")
	asJSON := flags.Bool("json", false, "print one JSON object {deployment, changes, from, file} instead of text")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, readdressUsage+flags.FlagUsages())
			return planExitOK
		}
		return readdressUsageError(stderr, err.Error())
	}
	switch {
	case flags.NArg() > 0:
		return readdressUsageError(stderr, fmt.Sprintf("unexpected argument %q", flags.Arg(0)))
	case *deployment == "":
		return readdressUsageError(stderr, "give the running deployment's file with --deployment FILE")
	case len(hostArgs) == 0:
		return readdressUsageError(stderr, "give the replaced host's new address with --host NAME=ADDRESS")
	}
	addrs := map[string]string{}
	for _, arg := range hostArgs {
		h, err := parseHostFlag(arg)
		if err != nil {
			return readdressUsageError(stderr, err.Error())
		}
		if _, dup := addrs[h.Name]; dup {
			return readdressUsageError(stderr, fmt.Sprintf("--host %s given twice", h.Name))
		}
		addrs[h.Name] = h.Address
	}
	if *out == "" {
		*out = *deployment
	}
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	nd, changes, err := placement.Readdress(d, addrs)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v; nothing was written\n", err)
		return planExitRefused
	}
	raw, err := os.ReadFile(*deployment)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	updated, err := placement.WithHostAddresses(raw, *deployment, addrs)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v; nothing was written\n", err)
		return planExitRefused
	}
	if err := refuseOverwrite([]string{*out}, *force); err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(*deployment); err == nil {
		perm = st.Mode().Perm()
	}
	if err := atomicfile.Write(*out, updated, perm); err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(readdressOutput{Deployment: nd, Changes: changes, From: *deployment, File: *out})
		return planExitOK
	}
	fmt.Fprintf(stdout, "Changes to %q (%s -> %s):\n", d.Name, *deployment, *out)
	for _, c := range changes {
		fmt.Fprintf(stdout, "  %s\n", c)
	}
	fmt.Fprintf(stdout, "\nWrote %s. Names, groups, ports and the layout are unchanged.\n", *out)
	if filepath.Dir(filepath.Clean(*out)) != filepath.Dir(filepath.Clean(*deployment)) && nd.Security != nil {
		fmt.Fprintf(stdout, "It names the same security files as %s, relative to its own directory: copy them beside it.\n", *deployment)
	}
	var moved []string
	for _, c := range changes {
		if c.Kind == "host" {
			moved = append(moved, c.Name)
		}
	}
	fmt.Fprintf(stdout, `
Next, with the old server of host %[1]s stopped for good:
  1. copy %[2]s and the member secret file beside it to the new server;
     the other hosts keep running with their file
  2. on the new server: umstored run --deployment %[2]s --host %[1]s --data-dir DIR
     (its stores are accepted at their new addresses only while nothing answers
     as them at the old ones, and catch up one per group before they vote)
  3. umstored status --deployment %[2]s
docs/operations.md, "Replacing a host", has the whole procedure.
`, strings.Join(moved, ", "), *out)
	return planExitOK
}

func readdressUsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "umstored plan --deployment: %s\nRun \"umstored plan --deployment FILE --help\" for the flags.\n", msg)
	return planExitUsage
}
