package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"umstore/internal/atomicfile"
	"umstore/internal/memberauth"
	"umstore/placement"
)

const addSecretUsage = `Usage: umstored plan --add-member-secret --deployment FILE [--force]

Gives a deployment file written before member secrets existed its secret:
writes a new random secret beside FILE (NAME.member-secret, mode 0600) and
adds security.member-secret-file to FILE, keeping the rest of the file as
it is. From then on every raft connection between two stores proves that
both hold the secret, so a process that is not a member can no longer
write the stores' raft logs.

A store with the secret and one without cannot talk raft to each other, so
switch every host at once: copy FILE and the secret file to every host that
runs stores (the secret readable only by the stores' user), stop every
host (umstored stop --deployment FILE), then start every host again.
Publishers, receivers and operators need only FILE.

Refuses if FILE already names a secret or the secret file exists, unless
--force: then a new secret replaces the old one (the same switch of every
host applies).

Flags:
`

// cmdPlanAddMemberSecret implements `umstored plan --add-member-secret`.
func cmdPlanAddMemberSecret(args []string, stdout, stderr io.Writer) int {
	flags := pflag.NewFlagSet("plan --add-member-secret", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {}
	flags.SortFlags = false
	add := flags.Bool("add-member-secret", false, "write a member secret beside the deployment file and reference it")
	deployment := flags.String("deployment", "", "the deployment `FILE` to add the secret to (required)")
	force := flags.Bool("force", false, "replace the member secret FILE already names, or a secret file already there, with a new one")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, addSecretUsage+flags.FlagUsages())
			return planExitOK
		}
		return addSecretUsageError(stderr, err.Error())
	}
	switch {
	case !*add:
		return addSecretUsageError(stderr, "--add-member-secret=false: leave the flag out to plan a deployment")
	case flags.NArg() > 0:
		return addSecretUsageError(stderr, fmt.Sprintf("unexpected argument %q", flags.Arg(0)))
	case *deployment == "":
		return addSecretUsageError(stderr, "give the deployment file with --deployment FILE")
	}
	path := *deployment
	d, err := placement.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	name := placement.MemberSecretFileFor(path)
	secret := filepath.Join(filepath.Dir(path), name)
	if d.Security != nil && d.Security.MemberSecretFile != "" && !*force {
		fmt.Fprintf(stderr, "umstored plan: %s already names a member secret (%s); nothing changed. --force replaces it with a new one, after which every host needs both files and a restart at the same time\n", path, d.Security.MemberSecretFile)
		return planExitRefused
	}
	if _, err := os.Stat(secret); err == nil && !*force {
		fmt.Fprintf(stderr, "umstored plan: %s already exists; nothing changed. Remove it, or give --force to replace it with a new secret\n", secret)
		return planExitRefused
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v\n", err)
		return planExitRefused
	}
	updated, err := placement.WithMemberSecretFile(raw, path, name)
	if err != nil {
		fmt.Fprintf(stderr, "umstored plan: %v; nothing changed\n", err)
		return planExitRefused
	}
	if err := atomicfile.Write(secret, memberauth.NewSecret(), 0o600); err != nil {
		fmt.Fprintf(stderr, "umstored plan: write the member secret: %v; nothing changed\n", err)
		return planExitRefused
	}
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	if err := atomicfile.Write(path, updated, perm); err != nil {
		fmt.Fprintf(stderr, "umstored plan: wrote the member secret %s but could not update %s: %v; run the command again with --force\n", secret, path, err)
		return planExitRefused
	}
	fmt.Fprintf(stdout, `Wrote the member secret %[1]s (mode 0600) and added "member-secret-file: %[2]s" to %[3]s.
Stores with the secret and stores without cannot talk raft to each other, so switch every host at once:
  1. copy %[3]s and %[1]s to every host that runs stores, side by side
     (the secret readable only by the stores' user; clients need only %[3]s)
  2. umstored stop --deployment %[3]s
  3. start every host again: umstored run --deployment %[3]s --host NAME --data-dir DIR
`, secret, name, path)
	return planExitOK
}

func addSecretUsageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "umstored plan --add-member-secret: %s\nRun \"umstored plan --add-member-secret --help\" for the flags.\n", msg)
	return planExitUsage
}

// memberSecretBeside returns the member secret file that belongs beside
// the deployment file out, writing a new one (mode 0600) unless a good one
// is there already: planning again must not change the secret of hosts
// that already run with it. A file there that is not a secret is an error.
func memberSecretBeside(out string) (path string, created bool, err error) {
	path = filepath.Join(filepath.Dir(out), placement.MemberSecretFileFor(out))
	if _, err := memberauth.LoadSecret(path); err == nil {
		return path, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("%v (remove %s and plan again to have a new secret written)", err, path)
	}
	if err := atomicfile.Write(path, memberauth.NewSecret(), 0o600); err != nil {
		return "", false, fmt.Errorf("write the member secret: %w", err)
	}
	return path, true, nil
}

// secretNote tells the operator about the member secret file.
func secretNote(path string, created bool) string {
	verb := "Wrote"
	if !created {
		verb = "Kept"
	}
	return fmt.Sprintf("%s the member secret %s (mode 0600): the stores prove to each other that they hold it; it goes beside the deployment file on every host that runs stores, and nowhere else.", verb, path)
}
