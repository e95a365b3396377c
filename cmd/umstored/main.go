package main

import (
	"fmt"
	"io"
	"os"

	"umstore/internal/formats"
	"umstore/internal/version"
)

const usage = `umstored runs umstore's replicated message stores.

Usage: umstored COMMAND [flags]

Commands:
  dev      run two groups of three stores (2+1 / 1+2 over two "hosts") on
           loopback in one process: the quickest way to try umstore
  plan     lay out stores over hosts, print the failure analysis and write a
           deployment file
  run      run the stores of one host of a deployment
  status   show every group and store of a deployment
  stop     stop every store of a deployment (or a host) cleanly
  backup   take an online backup of every group (--out DIR), or check one
           (--verify DIR)
  restore  lay out one host's stores of a deployment from a backup
  recover  the way out of "cannot recover group N: no store with state":
           list backups, promote one, or accept the loss
  version  print the version and build of this binary and the formats it
           reads and writes (also --version)

Run "umstored COMMAND --help" for a command's flags.
`

// commands maps each subcommand to its implementation; each returns the
// process exit code.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"backup":  cmdBackup,
	"dev":     cmdDev,
	"plan":    cmdPlan,
	"recover": cmdRecover,
	"restore": cmdRestore,
	"stop":    cmdStop,
	"run":     cmdRun,
	"status":  cmdStatus,
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "umstored", version.String())
		fmt.Fprint(stdout, formats.String())
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "umstored: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return cmd(args[1:], stdout, stderr)
}
