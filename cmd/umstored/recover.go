package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"umstore/deploystatus"
	"umstore/dirlock"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/repository"
	"umstore/storegroup"
)

const recoverUsage = `Usage: umstored recover --deployment FILE --host NAME --data-dir DIR --group N
                        (--list | --promote BACKUP | --accept-loss)

The way out of "cannot recover group N: no store with state": every store of
group N is empty (wiped disks, replaced hosts) while another group remembers
the group, so the stores refuse to start it again from nothing. Run this on a
host of the group while its umstored is stopped:

  --list          list this host's stores of group N and their numbered
                  backups (<store dir>.bak.NNNN, higher is newer) with what
                  each holds: group identity, applied index, sources and
                  their highest sequence numbers
  --promote PATH  make backup PATH the state of its store; start umstored
                  again and the group's other stores rejoin from it
  --accept-loss   accept that group N's messages are lost: its stores start
                  the group empty under a new identity (run it on every host
                  whose stores of the group are refused)

recover refuses while any member of group N is running with state: such a
group recovers by itself.

Flags:
`

func cmdRecover(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("recover", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	deployment := fs.String("deployment", "", "deployment `FILE` (required)")
	host := fs.String("host", "", "this host's name in the deployment (required)")
	dataDir := fs.String("data-dir", "", "the data directory given to umstored run on this host (required)")
	group := fs.Int("group", 0, "the group to recover (required)")
	list := fs.Bool("list", false, "list the stores' state and backups")
	promote := fs.String("promote", "", "make this backup `PATH` its store's state")
	acceptLoss := fs.Bool("accept-loss", false, "start the group empty under a new identity: its messages are lost")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log as text (key=value pairs) or json (one object per line), as umstored run does")
	fs.Usage = func() { fmt.Fprint(stderr, recoverUsage); fs.PrintDefaults() }
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	actions := 0
	for _, b := range []bool{*list, *promote != "", *acceptLoss} {
		if b {
			actions++
		}
	}
	if *deployment == "" || *host == "" || *dataDir == "" || *group < 1 || actions != 1 {
		fmt.Fprintln(stderr, "umstored recover: give --deployment, --host, --data-dir, --group and exactly one of --list, --promote, --accept-loss")
		fs.Usage()
		return 2
	}
	log, err := cli.Logger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "umstored recover:", err)
		return 2
	}
	// The packages recover calls log through the default logger: in the
	// daemon's format, not Go's.
	slog.SetDefault(log)
	d, err := placement.Load(*deployment)
	if err != nil {
		fmt.Fprintln(stderr, "umstored recover:", err)
		return 2
	}
	var mine []placement.StoreRef
	for _, ref := range d.StoresOn(*host) {
		if ref.Group == *group {
			mine = append(mine, ref)
		}
	}
	if len(mine) == 0 {
		fmt.Fprintf(stderr, "umstored recover: host %s runs no store of group %d\n", *host, *group)
		return 2
	}
	if *list {
		return recoverList(stdout, stderr, *dataDir, mine)
	}
	dialer := deploystatus.Dialer(d, "umstored recover", time.Second)
	v := deploystatus.Probe(d, dialer, deploystatus.Limits{ProbeTimeout: 2 * time.Second, RoundTimeout: 3 * time.Second, SkipSources: true})
	if st, ok := v.StoreWithState(*group); ok {
		fmt.Fprintf(stderr, "umstored recover: store %s of group %d is running with state (group %s): the group recovers by itself; recover is only for a group with no store with state\n", st.Name, *group, st.GroupID)
		return 1
	}
	var dirs []string
	for _, ref := range mine {
		dirs = append(dirs, filepath.Join(*dataDir, ref.Store.Name))
	}
	release, err := storegroup.LockDataDirs(dirs...)
	if err != nil {
		if errors.Is(err, dirlock.ErrLocked) {
			err = fmt.Errorf("%w (stop umstored run on this host first)", err)
		}
		fmt.Fprintln(stderr, "umstored recover:", err)
		return 1
	}
	defer release()
	if *acceptLoss {
		for _, dir := range dirs {
			if err := storegroup.AcceptLoss(dir); err != nil {
				fmt.Fprintln(stderr, "umstored recover:", err)
				return 1
			}
		}
		fmt.Fprintf(stdout, "group %d will start empty under a new identity the next time umstored run starts on host %s; its earlier messages are lost.\nRun the same command on the group's other hosts whose stores are refused.\n", *group, *host)
		return 0
	}
	return recoverPromote(stdout, stderr, *dataDir, mine, *promote)
}

func recoverList(stdout, stderr io.Writer, dataDir string, refs []placement.StoreRef) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tWHAT\tTAKEN\tGROUP ID\tAPPLIED\tSOURCES (highest seq)")
	for _, ref := range refs {
		dir := filepath.Join(dataDir, ref.Store.Name)
		row := func(what, taken, path string, inUse *dirlock.LockedError) {
			c, err := storegroup.InspectDataDir(path)
			if err != nil {
				// The whole reason: an operator decides on it.
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t(%s)\n", ref.Store.Name, what, taken, unreadableReason(err, inUse))
				return
			}
			var srcs []string
			for _, s := range c.Sources {
				srcs = append(srcs, fmt.Sprintf("%s:%d", cli.Printable(s.Name), s.HighSeq))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", ref.Store.Name, what, taken, orDash(c.GroupID), c.AppliedIndex, orDash(strings.Join(srcs, " ")))
		}
		inUse, release := holdForList(dir)
		row("current", "-", dir, inUse)
		release()
		backups, err := storegroup.ListBackups(dir)
		if err != nil {
			fmt.Fprintln(stderr, "umstored recover:", err)
			return 1
		}
		for _, b := range backups {
			row(b.Path, b.Time.UTC().Format(time.RFC3339), b.Path, nil)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nPromote a backup with --promote PATH, or accept the loss with --accept-loss.")
	return 0
}

// recoverPromote promotes backup, which must be a backup of one of refs.
func recoverPromote(stdout, stderr io.Writer, dataDir string, refs []placement.StoreRef, backup string) int {
	for _, ref := range refs {
		p, err := storegroup.PromoteBackup(filepath.Join(dataDir, ref.Store.Name), backup, ref.Group)
		if errors.Is(err, storegroup.ErrNotABackup) {
			continue
		}
		if p.Moved != "" {
			fmt.Fprintf(stdout, "moved the current content of %s to %s\n", ref.Store.Name, p.Moved)
		}
		if err != nil {
			fmt.Fprintln(stderr, "umstored recover:", err)
			return 1
		}
		fmt.Fprintf(stdout, "promoted %s: store %s now holds group %s (applied index %d). Start umstored run on this host; the group's other stores rejoin from it.\n",
			p.Backup, ref.Store.Name, p.Content.GroupID, p.Content.AppliedIndex)
		return 0
	}
	fmt.Fprintf(stderr, "umstored recover: %s is not a backup of a store of this group on this host (see --list)\n", filepath.Clean(backup))
	return 2
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// holdForList takes a store's data directory lock for the time of its
// listing, so that what the list says of a lock is the truth: inUse is
// the holder's refusal when a live process (umstored run) holds the
// directory, nil when the lock was free, however a dead holder left its
// files (a stale lock file is no lock: flock ends with its process).
// release frees the lock if taken.
func holdForList(dir string) (inUse *dirlock.LockedError, release func()) {
	if _, err := os.Stat(dir); err != nil {
		return nil, func() {} // nothing to lock; the row says what is missing
	}
	l, err := storegroup.LockDataDirs(dir)
	if err != nil {
		var le *dirlock.LockedError
		if errors.As(err, &le) {
			return le, func() {}
		}
		return nil, func() {}
	}
	return nil, l
}

// unreadableReason says why a store's state could not be read, whole:
// running (its directory held by a live process, named), locked by some
// other process while the directory lock was free, or the error itself.
func unreadableReason(err error, inUse *dirlock.LockedError) string {
	locked := errors.Is(err, repository.ErrLocked)
	switch {
	case locked && inUse != nil:
		return fmt.Sprintf("running: its files are open in %s; stop umstored run on this host to read or replace them", holder(inUse))
	case locked:
		return fmt.Sprintf("its repository is open in another process, though no umstored holds the data directory: %v", err)
	case inUse != nil:
		return fmt.Sprintf("%v (the data directory is held by %s)", err, holder(inUse))
	}
	return err.Error()
}

func holder(le *dirlock.LockedError) string {
	if le.Holder == nil {
		return "a process that left no holder information"
	}
	return le.Holder.String()
}
