package storegroup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"umstore/wire"
)

// memberAnswer is what a member said when probed.
type memberAnswer struct {
	name     string
	hasState bool
	groupID  string
	err      error
}

// decideBootstrap is run by a store with no local state. It asks every
// other member of the group what it holds, repeating until all answer or
// one with state answers:
//
//   - if any member has state or knows the group's identity, the group
//     exists: this store starts without bootstrapping and waits for the
//     leader to bring it up to date;
//   - if every member answers empty, the group is brand new: the first
//     member in the deployment's order bootstraps it, the others wait.
//
// A store never bootstraps while any member is unreachable: that member may
// hold the group's state.
func (s *Store) decideBootstrap(ctx context.Context) (bool, error) {
	lastReport := time.Time{}
	for {
		answers := s.probeMembers(ctx)
		var missing []string
		for _, a := range answers {
			switch {
			case a.err != nil:
				missing = append(missing, a.name)
			case a.hasState || a.groupID != "":
				s.log.Info("joining an existing group: a member has state; waiting for the leader to bring this store up to date", "member", a.name, "group_id", a.groupID)
				return false, nil
			}
		}
		if len(missing) == 0 {
			first := s.cfg.Members[0].Name
			if first == s.cfg.Name {
				return true, nil
			}
			s.log.Info("every member is empty: the group is new; waiting for its first member to bootstrap it", "bootstrapper", first)
			return false, nil
		}
		if time.Since(lastReport) > 5*time.Second {
			lastReport = time.Now()
			s.log.Info("empty store waiting for every member of its group to answer before deciding whether to bootstrap", "waiting_for", strings.Join(missing, ","))
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(s.cfg.ProbeInterval):
		}
	}
}

// probeMembers asks every other member of the group, concurrently.
func (s *Store) probeMembers(ctx context.Context) []memberAnswer {
	others := make([]Member, 0, len(s.cfg.Members)-1)
	for _, m := range s.cfg.Members {
		if m.Name != s.cfg.Name {
			others = append(others, m)
		}
	}
	out := make(chan memberAnswer, len(others))
	for _, m := range others {
		go func() {
			rep, err := ProbeStore(ctx, m.ClientAddr, s.dialer(time.Second))
			a := memberAnswer{name: m.Name, err: err}
			if err == nil {
				a.hasState, a.groupID = rep.HasState, rep.GroupID
			}
			out <- a
		}()
	}
	answers := make([]memberAnswer, 0, len(others))
	for range others {
		answers = append(answers, <-out)
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i].name < answers[j].name })
	return answers
}

func (s *Store) dialer(timeout time.Duration) *wire.Dialer {
	return &wire.Dialer{Client: "store " + s.cfg.Name, LocalIP: s.cfg.LocalIP, Timeout: timeout}
}

// ProbeStore asks the store at addr what it holds.
func ProbeStore(ctx context.Context, addr string, d *wire.Dialer) (*wire.ProbeReply, error) {
	c, _, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(timeout))
	if err := c.Send(&wire.Probe{ReqID: 1}); err != nil {
		return nil, err
	}
	m, err := c.Read()
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *wire.ProbeReply:
		return m, nil
	case *wire.Error:
		return nil, m
	default:
		return nil, fmt.Errorf("%w: probe answered with frame type %d", wire.ErrMalformed, m.Type())
	}
}
