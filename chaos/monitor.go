package main

import (
	"context"
	"time"
)

// monitor samples both hosts' status until ctx ends, recording every
// change of a store's group identity and every moment two empty stores of
// a group catch up together on one host.
func (c *cluster) monitor(ctx context.Context, hist *History) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		c.sample(ctx, hist)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample reads both hosts' status once and records what it shows: group
// identities, failures, sources held, empty stores catching up together.
func (c *cluster) sample(ctx context.Context, hist *History) {
	{
		for _, h := range c.hosts {
			sts, err := h.status(ctx)
			if err != nil {
				continue // down or paused
			}
			catching := map[int][]string{}
			for _, s := range sts {
				hist.ObserveGroupID(h.name, s.Name, s.Group, s.GroupID)
				hist.ObserveStore(h.name, s)
				if s.CatchingUp {
					catching[s.Group] = append(catching[s.Group], s.Name)
				}
			}
			for g, names := range catching {
				if len(names) > 1 {
					hist.ObserveCatchUp(CatchUpObs{Host: h.name, Group: g, Stores: names, Via: "status", At: time.Now()})
				}
			}
		}
	}
}
