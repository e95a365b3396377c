package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"umstore/dirlock"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
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
	fs.Usage = func() { fmt.Fprint(stderr, recoverUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitUsage(err)
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
	if err := groupHasNoRunningState(d, *group); err != nil {
		fmt.Fprintln(stderr, "umstored recover:", err)
		return 1
	}
	locks, err := lockStores(*dataDir, mine)
	if err != nil {
		fmt.Fprintln(stderr, "umstored recover:", err)
		return 1
	}
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	if *acceptLoss {
		for _, ref := range mine {
			dir := filepath.Join(*dataDir, ref.Store.Name)
			if err := os.WriteFile(filepath.Join(dir, "accept-loss"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o640); err != nil {
				fmt.Fprintln(stderr, "umstored recover:", err)
				return 1
			}
		}
		fmt.Fprintf(stdout, "group %d will start empty under a new identity the next time umstored run starts on host %s; its earlier messages are lost.\nRun the same command on the group's other hosts whose stores are refused.\n", *group, *host)
		return 0
	}
	return recoverPromote(stdout, stderr, *dataDir, mine, *promote)
}

// groupHasNoRunningState refuses when some member of the group answers
// with state: that group needs no recovery.
func groupHasNoRunningState(d *placement.Deployment, group int) error {
	dialer := &wire.Dialer{Client: "umstored recover", Timeout: time.Second}
	if tlsCfg, token, err := cli.ClientSecurity(d, cli.SecurityFlags{}); err == nil {
		dialer.TLS, dialer.Token = tlsCfg, token
	}
	for _, m := range d.Members(group) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rep, err := storegroup.ProbeStore(ctx, m.ClientAddr(), dialer)
		cancel()
		if err == nil && (rep.HasState || rep.GroupID != "") {
			return fmt.Errorf("store %s of group %d is running with state (group %s): the group recovers by itself; recover is only for a group with no store with state", m.Store.Name, group, rep.GroupID)
		}
	}
	return nil
}

// lockStores takes the data-directory locks of the stores, so recover never
// changes files under a running store.
func lockStores(dataDir string, refs []placement.StoreRef) ([]dirlock.Lock, error) {
	var locks []dirlock.Lock
	for _, ref := range refs {
		l, err := dirlock.Acquire(context.Background(), filepath.Join(dataDir, ref.Store.Name), dirlock.Options{Name: ref.Store.Name})
		if err != nil {
			for _, l := range locks {
				l.Release()
			}
			if errors.Is(err, dirlock.ErrLocked) {
				return nil, fmt.Errorf("%w (stop umstored run on this host first)", err)
			}
			return nil, err
		}
		locks = append(locks, l)
	}
	return locks, nil
}

func recoverList(stdout, stderr io.Writer, dataDir string, refs []placement.StoreRef) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tWHAT\tTAKEN\tGROUP ID\tAPPLIED\tSOURCES (highest seq)")
	for _, ref := range refs {
		dir := filepath.Join(dataDir, ref.Store.Name)
		row := func(what, taken, path string) {
			c, err := storegroup.InspectDataDir(path)
			if err != nil {
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t(%v)\n", ref.Store.Name, what, taken, shortErr(err))
				return
			}
			var srcs []string
			for _, s := range c.Sources {
				srcs = append(srcs, fmt.Sprintf("%s:%d", s.Name, s.HighSeq))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", ref.Store.Name, what, taken, orDash(c.GroupID), c.AppliedIndex, orDash(strings.Join(srcs, " ")))
		}
		row("current", "-", dir)
		backups, err := storegroup.ListBackups(dir)
		if err != nil {
			fmt.Fprintln(stderr, "umstored recover:", err)
			return 1
		}
		for _, b := range backups {
			row(b.Path, b.Time.UTC().Format(time.RFC3339), b.Path)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nPromote a backup with --promote PATH, or accept the loss with --accept-loss.")
	return 0
}

func recoverPromote(stdout, stderr io.Writer, dataDir string, refs []placement.StoreRef, backup string) int {
	backup = filepath.Clean(backup)
	for _, ref := range refs {
		dir := filepath.Join(dataDir, ref.Store.Name)
		backups, err := storegroup.ListBackups(dir)
		if err != nil {
			fmt.Fprintln(stderr, "umstored recover:", err)
			return 1
		}
		for _, b := range backups {
			if filepath.Clean(b.Path) != backup {
				continue
			}
			content, err := storegroup.InspectDataDir(b.Path)
			if err != nil {
				fmt.Fprintf(stderr, "umstored recover: backup %s cannot be read: %v\n", b.Path, err)
				return 1
			}
			if content.GroupIndex != 0 && content.GroupIndex != ref.Group {
				fmt.Fprintf(stderr, "umstored recover: backup %s holds group %d, not %d\n", b.Path, content.GroupIndex, ref.Group)
				return 1
			}
			if storegroup.DataDirHasState(dir) {
				moved, err := storegroup.BackupDataDir(dir)
				if err != nil {
					fmt.Fprintln(stderr, "umstored recover:", err)
					return 1
				}
				fmt.Fprintf(stdout, "moved the current content of %s to %s\n", ref.Store.Name, moved)
			}
			if err := moveContents(b.Path, dir); err != nil {
				fmt.Fprintln(stderr, "umstored recover:", err)
				return 1
			}
			fmt.Fprintf(stdout, "promoted %s: store %s now holds group %s (applied index %d). Start umstored run on this host; the group's other stores rejoin from it.\n",
				b.Path, ref.Store.Name, content.GroupID, content.AppliedIndex)
			return 0
		}
	}
	fmt.Fprintf(stderr, "umstored recover: %s is not a backup of a store of this group on this host (see --list)\n", backup)
	return 2
}

// moveContents moves everything in src into dst (except lock files) and
// removes src.
func moveContents(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "LOCK" || e.Name() == "LOCK.info" || e.Name() == "LEASE" {
			continue
		}
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("move %s back: %w", e.Name(), err)
		}
	}
	return os.RemoveAll(src)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
