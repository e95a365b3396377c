package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// catchupResult is the wiped-store test on one layout: a host loses its
// disk and its stores catch up from the others. With the 1x3 layout one
// store (a follower's host) is wiped and catches up alone: the goal's
// figure. With 2x3 host A's three stores are wiped (group 1 loses its
// quorum with them), as in earlier reference runs.
type catchupResult struct {
	Layout      string  `json:"layout"` // "1x3" or "2x3", see hosts.go
	What        string  `json:"layout_description"`
	WipedHost   string  `json:"wiped_host"`
	Messages    int     `json:"messages"`
	MessageSize int     `json:"message_size"`
	Payload     string  `json:"payload"`
	PublishedMB float64 `json:"published_mb"` // payload, 10^6 bytes, per group
	// Disk is the disk measured just before the wipe, in the same file
	// system (see diskResult); DiskWriteMBps is its SeqMBps, the figure the
	// goal divides by.
	Disk          *diskResult `json:"disk"`
	DiskWriteMBps float64     `json:"disk_write_mb_per_s"`
	// WallS is from restarting the wiped host's daemon to every one of its
	// stores caught up (not catching up, with state, holding the others'
	// bytes).
	WallS          float64        `json:"wall_s"`
	RestoredMB     float64        `json:"restored_payload_mb"` // payload over all of the host's stores
	RestoredDiskMB float64        `json:"restored_disk_mb"`    // the host's data directory afterwards
	PayloadMBps    float64        `json:"payload_mb_per_s"`    // RestoredMB / WallS
	DiskMBps       float64        `json:"disk_mb_per_s"`       // RestoredDiskMB / WallS
	Stores         []catchupStore `json:"stores"`
	Note           string         `json:"note,omitempty"`
}

type catchupStore struct {
	Name      string  `json:"name"`
	Group     int     `json:"group"`
	PayloadMB float64 `json:"payload_mb"`
	StartS    float64 `json:"start_s"` // since the restart: first seen catching up (after waiting for its turn)
	DoneS     float64 `json:"done_s"`
	MBps      float64 `json:"payload_mb_per_s"` // PayloadMB / (DoneS - StartS)
	// OfDisk is MBps ÷ the disk's sequential bandwidth (Disk.SeqMBps).
	OfDisk float64 `json:"of_disk"`
}

// catchupArgs are what a catch-up run needs besides the layout.
type catchupArgs struct {
	mb, size, sources, flight, diskMiB int
	payload                            string
	// profile, if set, is where CPU profiles of the catch-up go: one of the
	// wiped host and one of each other host, taken while it catches up
	// (PROFILE-<layout>-<host>.prof).
	profile string
}

func runCatchup(ctx context.Context, b umBins, dir string, lay layout, a catchupArgs, logf func(string, ...any)) (*catchupResult, error) {
	res := &catchupResult{Layout: lay.Name, What: lay.What, MessageSize: a.size, Payload: a.payload}
	logf("catch-up %s: starting %s", lay.Name, lay.What)
	u, err := startHosts(ctx, b, dir, lay, b.storeArgs())
	if err != nil {
		return nil, err
	}
	defer u.stop()

	res.Messages = (a.mb << 20) / a.size / a.sources * a.sources
	logf("catch-up %s: publishing %d MiB of %d-byte messages", lay.Name, a.mb, a.size)
	pr, err := runUmpub(ctx, b, u.deployment, "catchup", load{size: a.size, count: res.Messages, sources: a.sources, flight: a.flight, payload: a.payload, seed: 1 << 40}, filepath.Join(filepath.Dir(dir), "umpub-catchup.log"))
	if err != nil {
		return nil, err
	}
	logf("catch-up %s: published at %.0f msgs/s", lay.Name, pr.MsgsPerS)

	// Every group holds everything (the publisher sends to all; repair
	// fills any gap): wait until every store holds its group's bytes.
	target, err := waitSame(ctx, u, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	res.PublishedMB = float64(target[1]) / 1e6

	victim, err := pickWiped(ctx, u)
	if err != nil {
		return nil, err
	}
	res.WipedHost = victim.spec.Name
	logf("catch-up %s: disk sequential write, 3 × %d MiB + fdatasync, %d MiB with fdatasync per MiB, 4 KiB fdatasyncs, 3 bare copies over loopback TCP", lay.Name, a.diskMiB, a.diskMiB)
	if res.Disk, err = measureDisk(dir, a.diskMiB); err != nil {
		return nil, err
	}
	res.DiskWriteMBps = res.Disk.SeqMBps
	logf("catch-up %s: disk %.0f MB/s (median of %s; %.0f MB/s with fdatasync per MiB; %.0f 4 KiB fdatasyncs/s; bare copy %.0f MB/s, median of %s); kill -9 host %s, wipe its data directory, restart it",
		lay.Name, res.Disk.SeqMBps, joinf(res.Disk.SeqRuns), res.Disk.DsyncMBps, res.Disk.Sync4KPerS, res.Disk.CopyMBps, joinf(res.Disk.CopyRuns), victim.spec.Name)
	victim.p.kill9()
	if err := os.RemoveAll(victim.dir); err != nil {
		return nil, err
	}
	if err := victim.start(); err != nil {
		return nil, err
	}
	t0 := victim.startedAt
	profiled := profileCatchup(ctx, u, lay, a.profile, logf)
	defer func() { <-profiled }()
	start := map[string]time.Time{}
	done := map[string]time.Time{}
	group := map[string]int{}
	timeout := 10*time.Minute + time.Duration(a.mb)*time.Second
	for {
		st, err := getStatus(ctx, victim.admin)
		now := time.Now()
		if err == nil && len(st.Stores) > 0 {
			all := true
			for _, s := range st.Stores {
				group[s.Name] = s.Group
				if _, ok := start[s.Name]; !ok && !s.WaitingToJoin && (s.CatchingUp || s.State != "starting") {
					start[s.Name] = now
				}
				if _, ok := done[s.Name]; !ok && !s.WaitingToJoin && !s.CatchingUp && s.HasState && s.bytes() == target[s.Group] {
					done[s.Name] = now
					logf("catch-up %s: %s caught up after %.1fs", lay.Name, s.Name, now.Sub(t0).Seconds())
				}
				if _, ok := done[s.Name]; !ok {
					all = false
				}
			}
			if all {
				break
			}
		}
		if now.Sub(t0) > timeout {
			return nil, fmt.Errorf("host %s's stores not caught up after %v (logs in %s)", victim.spec.Name, timeout, dir)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	var last time.Time
	for name, d := range done {
		if d.After(last) {
			last = d
		}
		cs := catchupStore{Name: name, Group: group[name], PayloadMB: float64(target[group[name]]) / 1e6,
			StartS: start[name].Sub(t0).Seconds(), DoneS: d.Sub(t0).Seconds()}
		if el := d.Sub(start[name]).Seconds(); el > 0 {
			cs.MBps = cs.PayloadMB / el
		}
		cs.OfDisk = ratio(cs.MBps, res.DiskWriteMBps)
		res.RestoredMB += cs.PayloadMB
		res.Stores = append(res.Stores, cs)
	}
	slices.SortFunc(res.Stores, func(x, y catchupStore) int { return strings.Compare(x.Name, y.Name) })
	res.WallS = last.Sub(t0).Seconds()
	res.RestoredDiskMB = float64(dirSize(victim.dir)) / 1e6
	res.PayloadMBps = res.RestoredMB / res.WallS
	res.DiskMBps = res.RestoredDiskMB / res.WallS
	res.Note = "status polled every 100 ms; start_s is when a store was first seen running or catching up (an empty store waits for the one before it in its group)"
	return res, nil
}

// waitSame waits until every store of the deployment holds as many payload
// bytes as the fullest store of its group, and returns those per group.
func waitSame(ctx context.Context, u *umHosts, timeout time.Duration) (map[int]uint64, error) {
	deadline := time.Now().Add(timeout)
	for {
		all, err := u.statuses(ctx)
		if err == nil {
			target := map[int]uint64{}
			var stores []storeStatus
			for _, h := range all {
				stores = append(stores, h.Stores...)
			}
			for _, s := range stores {
				target[s.Group] = max(target[s.Group], s.bytes())
			}
			same := len(target) == u.layout.Groups && len(stores) == u.layout.stores()
			for _, s := range stores {
				same = same && s.bytes() == target[s.Group]
			}
			if same {
				return target, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stores do not agree on what they hold after publishing (%v)", err)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// pickWiped is the host to wipe: A with two hosts (as earlier reference
// runs did; it holds two of group 1's three stores), else the last host
// that leads no group, so that the test times catch-up and not an election.
func pickWiped(ctx context.Context, u *umHosts) (*umHost, error) {
	if len(u.hosts) == 2 {
		return u.hosts[0], nil
	}
	all, err := u.statuses(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		leads := false
		for _, s := range all[i].Stores {
			leads = leads || strings.EqualFold(s.State, "leader")
		}
		if !leads {
			return u.hosts[i], nil
		}
	}
	return u.hosts[len(u.hosts)-1], nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// catchupProfileSeconds is how long each catch-up profile runs: about the
// time a wiped store of the default 1 GiB takes to catch up.
const catchupProfileSeconds = 5

// profileCatchup takes a CPU profile of every host of u at once, in the
// background, once the wiped host's admin address answers, and closes the
// channel it returns when all are saved (nothing to do without a file).
func profileCatchup(ctx context.Context, u *umHosts, lay layout, file string, logf func(string, ...any)) <-chan struct{} {
	done := make(chan struct{})
	if file == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, h := range u.hosts {
			path := fmt.Sprintf("%s-%s-%s.prof", strings.TrimSuffix(file, ".prof"), lay.Name, h.spec.Name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50 && ctx.Err() == nil; i++ { // the restarted host serves after its start
					if err := fetchProfile(ctx, h.admin, catchupProfileSeconds, path); err == nil {
						logf("catch-up %s: saved a %d s CPU profile of host %s in %s", lay.Name, catchupProfileSeconds, h.spec.Name, path)
						return
					}
					_ = sleepCtx(ctx, 50*time.Millisecond)
				}
				logf("catch-up %s: no CPU profile of host %s", lay.Name, h.spec.Name)
			}()
		}
		wg.Wait()
	}()
	return done
}
