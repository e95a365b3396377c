package storegroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"umstore/wire"
)

// startKind says how an empty store starts.
type startKind int

const (
	startBootstrap    startKind = iota // brand-new group, this store creates it
	startJoinNew                       // brand-new group, another member creates it
	startJoinExisting                  // the group has state: catch up before voting
	startWithState                     // the store has state: just start
)

// startDecision is the outcome of decideStart.
type startDecision struct {
	kind   startKind
	target logPosition // for startJoinExisting: where the vote gate opens
	from   string      // the member whose answer set target
}

// memberAnswer is what a store said when probed.
type memberAnswer struct {
	name  string
	reply *wire.ProbeReply
	err   error
}

func (a memberAnswer) hasState() bool {
	return a.reply != nil && (a.reply.HasState || a.reply.GroupID != "")
}

func (a memberAnswer) position() logPosition {
	return logPosition{Term: a.reply.LastTerm, Index: a.reply.LastIndex}
}

// decideStart is run by a store with no local state. It asks the other
// members of its group (and, before creating a group, every store of the
// deployment) what they hold, repeating until it can decide safely:
//
//   - some member has state, and either a leader answered or every member
//     did: the group exists; join it and catch up, voting only for
//     candidates whose log reaches the leader's (or the most up-to-date
//     member's) last entry until caught up;
//   - every member answered empty and no store of any other group
//     remembers this group's identity: the group is brand new; the first
//     member in the deployment's order bootstraps it;
//   - every member answered empty but another group remembers the
//     identity: the group's data is gone; refuse with ErrNoStoreWithState.
//
// It never decides while a store whose answer could change the decision
// is silent.
func (s *Store) decideStart(ctx context.Context) (startDecision, error) {
	var lastReport time.Time
	report := func(msg string, args ...any) {
		if time.Since(lastReport) > 5*time.Second {
			lastReport = time.Now()
			s.log.Info(msg, args...)
		}
	}
	for {
		answers := s.probe(ctx, s.otherMembers())
		var missing []string
		var best *memberAnswer
		for i, a := range answers {
			switch {
			case a.err != nil:
				missing = append(missing, a.name)
			case a.hasState() && a.reply.LastIndex == 0:
				// A member with state that cannot say how far its log goes
				// (an older store answering before its raft runs): it could
				// hold every acknowledged write, so it counts as silent.
				missing = append(missing, a.name)
			case a.hasState():
				if a.reply.State == "Leader" {
					return startDecision{kind: startJoinExisting, target: a.position(), from: a.name}, nil
				}
				if best == nil || a.position().atLeast(best.position()) {
					best = &answers[i]
				}
			}
		}
		if best != nil {
			s.setRefusal(nil)
		}
		switch {
		case best != nil && len(missing) == 0:
			return startDecision{kind: startJoinExisting, target: best.position(), from: best.name}, nil
		case best != nil:
			report("empty store waiting to rejoin: a member has state but no leader answered; waiting for every member so as not to vote against entries a silent member may hold",
				"has_state", best.name, "waiting_for", strings.Join(missing, ","))
		case len(missing) > 0:
			report("empty store waiting for every member of its group to answer before deciding whether to bootstrap", "waiting_for", strings.Join(missing, ","))
		default:
			d, wait, err := s.decideNewGroup(ctx)
			switch {
			case errors.Is(err, ErrNoStoreWithState) && s.acceptsLoss():
				s.log.Error("ACCEPTING DATA LOSS as the operator asked (umstored recover --accept-loss): the group starts empty under a new identity", "group", s.cfg.Group, "remembered", err.Error())
				return s.newGroupDecision(), nil
			case errors.Is(err, ErrNoStoreWithState):
				// Keep answering probes and keep looking: an operator may
				// promote a backup into another member (umstored recover).
				if s.setRefusal(err) {
					s.log.Error("store refuses to start", "err", err)
				}
			case err != nil || wait == "":
				return d, err
			default:
				report("every member of the group is empty; waiting for every store of the deployment to answer before creating the group", "waiting_for", wait)
			}
		}
		select {
		case <-ctx.Done():
			return startDecision{}, ctx.Err()
		case <-time.After(s.cfg.ProbeInterval):
		}
	}
}

// decideNewGroup is called when every member of the group answered empty.
// It returns wait=true (with the silent stores named) if some store of
// another group has not answered.
func (s *Store) decideNewGroup(ctx context.Context) (startDecision, string, error) {
	var others []Member
	for _, g := range s.cfg.OtherGroups {
		others = append(others, g.Members...)
	}
	var missing []string
	for _, a := range s.probe(ctx, others) {
		if a.err != nil {
			missing = append(missing, a.name)
			continue
		}
		for _, k := range a.reply.KnownGroups {
			if k.Index == s.cfg.Group && k.GroupID != "" {
				return startDecision{}, "", fmt.Errorf("cannot recover group %d: %w: every store of the group is empty, but store %s remembers the group's identity %s; restore a store from a backup, or accept the loss explicitly (see `umstored recover --help`)",
					s.cfg.Group, ErrNoStoreWithState, a.name, k.GroupID)
			}
		}
	}
	if len(missing) > 0 {
		return startDecision{}, strings.Join(missing, ","), nil
	}
	return s.newGroupDecision(), "", nil
}

// newGroupDecision: the first member in the deployment's order bootstraps
// a brand-new group, the others wait to be replicated to.
func (s *Store) newGroupDecision() startDecision {
	if s.cfg.Members[0].Name == s.cfg.Name {
		return startDecision{kind: startBootstrap}
	}
	s.log.Info("every store is empty: the group is new; waiting for its first member to bootstrap it", "bootstrapper", s.cfg.Members[0].Name)
	return startDecision{kind: startJoinNew}
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

func (s *Store) otherMembers() []Member {
	out := make([]Member, 0, len(s.cfg.Members)-1)
	for _, m := range s.cfg.Members {
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
	return &wire.Dialer{Client: "store " + s.cfg.Name, LocalIP: s.cfg.LocalIP, Timeout: timeout, TLS: s.cfg.Security.ClientTLS, Token: s.cfg.Security.Token}
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
