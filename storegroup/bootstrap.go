package storegroup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"umstore/wire"
)

// decideStart is run by a store with no local state. It asks the other
// members of its group (and, before creating a group, every store of the
// deployment) what they hold, and decides from their answers
// (startInput.decide, start_decision.go), repeating every ProbeInterval
// while the decision is to wait or to refuse: a refusing store keeps
// answering probes and keeps looking, since an operator may promote a
// backup into another member (umstored recover).
func (s *Store) decideStart(ctx context.Context) (startDecision, error) {
	var lastReport time.Time
	report := func(msg string, args ...any) {
		if time.Since(lastReport) > 5*time.Second {
			lastReport = time.Now()
			s.log.Info(msg, args...)
		}
	}
	for {
		in := startInput{self: s.cfg.Name, group: s.cfg.Group, order: s.memberNames(), preferred: s.cfg.PreferredMembers, members: s.probe(ctx, s.otherMembers())}
		d := in.decide()
		if d.kind == startAskOtherGroups {
			in.others, in.othersAsked = s.probe(ctx, s.otherGroupsStores()), true
			in.acceptLoss = s.acceptsLoss()
			d = in.decide()
		}
		if d.stateSeen || (d.kind != startWait && d.kind != startRefuse) {
			// A member with state answered (an operator restored one), or
			// the store starts: it no longer refuses.
			s.setRefusal(nil)
		}
		switch d.kind {
		case startWait:
			var args []any
			if d.from != "" {
				args = append(args, "has_state", d.from)
			}
			report(d.why, append(args, "waiting_for", strings.Join(d.silent, ","))...)
		case startRefuse:
			if s.setRefusal(d.err) {
				s.log.Error("store refuses to start", "err", d.err)
			}
		default:
			if d.err != nil {
				s.log.Error("ACCEPTING DATA LOSS as the operator asked (umstored recover --accept-loss): the group starts empty under a new identity", "group", s.cfg.Group, "remembered", d.err.Error())
			}
			if d.kind == startJoinNew {
				s.log.Info("every store is empty: the group is new; waiting for its first member to bootstrap it", "bootstrapper", d.from)
			}
			return d, nil
		}
		select {
		case <-ctx.Done():
			return startDecision{}, ctx.Err()
		case <-time.After(s.cfg.ProbeInterval):
		}
	}
}

// acceptLossFile, written by `umstored recover --accept-loss`, lets an
// empty store start its group again although another group remembers the
// group's identity: the operator has accepted that its messages are lost.
const acceptLossFile = "accept-loss"

func (s *Store) acceptsLoss() bool {
	_, err := os.Stat(filepath.Join(s.cfg.DataDir, acceptLossFile))
	return err == nil
}

// setRefusal records (or, with nil, clears) why the store does not start,
// and reports whether it changed.
func (s *Store) setRefusal(err error) bool {
	s.refusalMu.Lock()
	defer s.refusalMu.Unlock()
	changed := (s.refusal == nil) != (err == nil)
	s.refusal = err
	return changed
}

func (s *Store) refusalErr() error {
	s.refusalMu.Lock()
	defer s.refusalMu.Unlock()
	return s.refusal
}

// memberNames returns the group's members' names in the deployment's order.
func (s *Store) memberNames() []string {
	out := make([]string, len(s.cfg.Members))
	for i, m := range s.cfg.Members {
		out[i] = m.Name
	}
	return out
}

// otherGroupsStores returns every store of the other groups, where they
// listen now (members_book.go).
func (s *Store) otherGroupsStores() []Member {
	var out []Member
	for _, g := range s.currentOtherGroups() {
		out = append(out, g.Members...)
	}
	return out
}

// otherMembers returns the other members of the group, where they listen
// now (members_book.go).
func (s *Store) otherMembers() []Member {
	out := make([]Member, 0, len(s.cfg.Members)-1)
	for _, m := range s.addressBook().members() {
		if m.Name != s.cfg.Name {
			out = append(out, m)
		}
	}
	return out
}

// probe asks stores what they hold, concurrently.
func (s *Store) probe(ctx context.Context, stores []Member) []memberAnswer {
	out := make(chan memberAnswer, len(stores))
	for _, m := range stores {
		go func() {
			rep, err := ProbeStore(ctx, m.ClientAddr, s.dialer(time.Second))
			out <- memberAnswer{name: m.Name, reply: rep, err: err}
		}()
	}
	answers := make([]memberAnswer, 0, len(stores))
	for range stores {
		answers = append(answers, <-out)
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i].name < answers[j].name })
	return answers
}

func (s *Store) dialer(timeout time.Duration) *wire.Dialer {
	return &wire.Dialer{Client: "store " + s.cfg.Name, LocalIP: s.cfg.LocalIP, Timeout: timeout, TLS: s.cfg.Security.ClientTLS, Token: s.cfg.Security.Token, DialContext: s.cfg.Dial}
}

// ProbeStore asks the store at addr what it holds.
func ProbeStore(ctx context.Context, addr string, d *wire.Dialer) (*wire.ProbeReply, error) {
	return askOnce[*wire.ProbeReply](ctx, addr, d, &wire.Probe{ReqID: 1}, "Probe")
}

// askOnce sends req on a new connection to the store at addr and reads its
// one answer, a T or an error frame, within the dialer's timeout (5 s if
// none).
func askOnce[T wire.Message](ctx context.Context, addr string, d *wire.Dialer, req wire.Message, what string) (T, error) {
	var zero T
	c, _, err := d.Dial(ctx, addr)
	if err != nil {
		return zero, err
	}
	defer c.Close()
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(timeout))
	if err := c.Send(req); err != nil {
		return zero, err
	}
	m, err := c.Read()
	if err != nil {
		return zero, err
	}
	switch m := m.(type) {
	case T:
		return m, nil
	case *wire.Error:
		return zero, m
	}
	return zero, fmt.Errorf("%w: %s answered with frame type %d", wire.ErrMalformed, what, m.Type())
}
