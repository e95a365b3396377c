package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// groupState is the part of `umstored status --json` the harness reads.
type groupState struct {
	Index  int    `json:"index"`
	Leader string `json:"leader"`
	Stores []struct {
		Name  string `json:"name"`
		Host  string `json:"host"`
		State string `json:"state"`
	} `json:"stores"`
}

// deploymentStatus runs `umstored status --json`: the operator's view,
// with the oldest deployment file that still places a host where it is
// (statusFile): the planned one until both hosts were replaced.
func (c *cluster) deploymentStatus(ctx context.Context) ([]groupState, bool, error) {
	out, errOut, err := runTool(ctx, filepath.Join(c.bin, "umstored"), "status", "--deployment", c.statusFile(), "--json")
	var st struct {
		Groups     []groupState `json:"groups"`
		Publishing bool         `json:"publishing"`
	}
	if jerr := json.Unmarshal([]byte(lastLine(out)), &st); jerr != nil {
		return nil, false, fmt.Errorf("umstored status --json: %w (exit: %v): %s%s", jerr, err, out, errOut)
	}
	return st.Groups, err == nil && st.Publishing, nil
}

// restored reports whether the deployment is whole again: every store up,
// every group with a leader, publishing possible, no store of either host
// still catching up, waiting to join, or failed, and every store applied
// through what its group's leader had applied when the wait first saw it
// (marks, by group: a store that came back and has not replayed what it
// missed is not whole yet, and may still meet damage in what it replays).
// The string says what is missing. A store that stopped itself on damaged
// files is its daemon's to start again (storehost does, docs/operations.md
// "A failed store"): the harness does not restart a daemon for it.
func (c *cluster) restored(ctx context.Context, marks map[int]uint64) (ok bool, why string) {
	for _, h := range c.hosts {
		if !h.running() {
			return false, "host " + h.name + " is not running"
		}
	}
	groups, publishing, err := c.deploymentStatus(ctx)
	if err != nil {
		return false, err.Error()
	}
	if !publishing {
		return false, "umstored status says publishing is not possible"
	}
	for _, g := range groups {
		if g.Leader == "" {
			return false, fmt.Sprintf("group %d has no leader", g.Index)
		}
		for _, s := range g.Stores {
			if s.State != "up" && s.State != "leader" {
				return false, fmt.Sprintf("store %s is %s", s.Name, s.State)
			}
		}
	}
	var all []storeStatus
	for _, h := range c.hosts {
		sts, err := h.status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range sts {
			if s.CatchingUp || s.WaitingToJoin || s.Error != "" {
				return false, fmt.Sprintf("store %s: catching_up=%v waiting_to_join=%v error=%q", s.Name, s.CatchingUp, s.WaitingToJoin, s.Error)
			}
		}
		all = append(all, sts...)
	}
	for _, s := range all {
		if s.State == "Leader" && marks[s.Group] == 0 {
			marks[s.Group] = s.AppliedIndex
		}
	}
	for _, s := range all {
		if s.AppliedIndex < marks[s.Group] {
			return false, fmt.Sprintf("store %s applied through %d, its group's leader had applied %d", s.Name, s.AppliedIndex, marks[s.Group])
		}
	}
	return true, ""
}

// waitRestored waits until restored holds, at most timeout.
func (c *cluster) waitRestored(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	marks := map[int]uint64{}
	for {
		ok, w := c.restored(ctx, marks)
		if why = w; ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not restored after %v: %s", timeout, why)
		}
		if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for restoration (%s): %w", why, err)
		}
	}
}

// dumpStacks saves every goroutine's stack of each running host daemon
// (its /debug/pprof/goroutine?debug=2) into the schedule's directory, as
// goroutines-<host>-<label>.txt, and returns the files written: the
// evidence of a deployment that did not come back (a wedged replication,
// a lock held), which its logs alone do not show.
func (c *cluster) dumpStacks(ctx context.Context, label string) []string {
	var files []string
	for _, h := range c.hosts {
		if !h.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.adminAddr()+"/debug/pprof/goroutine?debug=2", nil)
		if err != nil {
			cancel()
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			c.log.Warn("could not dump the daemon's stacks", "host", h.name, "err", err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			c.log.Warn("could not dump the daemon's stacks", "host", h.name, "status", resp.Status, "err", err)
			continue
		}
		path := filepath.Join(c.dir, fmt.Sprintf("goroutines-%s-%s.txt", h.name, label))
		if err := os.WriteFile(path, body, 0o644); err == nil {
			files = append(files, path)
		}
	}
	return files
}

// waitSnapshotted waits, at most timeout, until every store reports a
// snapshot of its own: from then on its log is compacted, so a member that
// is wiped catches up by snapshot install. It returns the stores that had
// none when it gave up.
func (c *cluster) waitSnapshotted(ctx context.Context, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for _, h := range c.hosts {
			sts, err := h.status(ctx)
			if err != nil {
				missing = append(missing, "host "+h.name)
				continue
			}
			for _, s := range sts {
				if s.SnapshotIndex == 0 {
					missing = append(missing, s.Name)
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) || sleepCtx(ctx, 200*time.Millisecond) != nil {
			return missing
		}
	}
}
