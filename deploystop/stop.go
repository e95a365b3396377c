package deploystop

import (
	"context"
	"fmt"
	"sort"
	"time"

	"umstore/deploystatus"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/wire"
)

// Order lists the stores of d to stop: group by group in the deployment's
// order, each group's stores in the deployment's order but with its
// leader, as v saw it, last. With host set, only that host's stores are
// listed.
func Order(d *placement.Deployment, v deploystatus.View, host string) []placement.StoreRef {
	leader := map[string]bool{}
	for _, g := range v.Groups {
		if g.Leader != "" {
			leader[g.Leader] = true
		}
	}
	var out []placement.StoreRef
	for _, g := range d.Groups {
		refs := d.Members(g.Index)
		sort.SliceStable(refs, func(i, j int) bool { return !leader[refs[i].Store.Name] && leader[refs[j].Store.Name] })
		for _, ref := range refs {
			if host == "" || ref.Host.Name == host {
				out = append(out, ref)
			}
		}
	}
	return out
}

// Store asks the store at ref to stop and waits, up to timeout, until it
// no longer answers. A store that does not answer counts as stopped.
// operatorToken is the deployment's operator token ("" if it has none):
// a store that has one stops only for it.
func Store(ref placement.StoreRef, dialer *wire.Dialer, operatorToken string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, _, err := dialer.Dial(ctx, ref.ClientAddr())
	if err != nil {
		return nil // not running
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
	err = c.Send(&wire.Shutdown{ReqID: 1, Token: operatorToken})
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
