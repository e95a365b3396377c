package repository

import (
	"fmt"
	"math/rand/v2"
)

// receiverEntry draws one receiver command for randomLog: registrations
// (paced or not, of sessions v0-v2), expiries and forgets (mostly of the
// session last registered, sometimes of another), paced source
// registrations (modes 0-3, 3 refused), now and then on the source "omega"
// the group never holds or with an empty name or session. session is
// randomLog's memory of each source's last registered session, which a
// RegisterPaced updates; receiverSessions remembers each receiver's last
// registered session, which expiries and forgets mostly name.
func receiverEntry(rng *rand.Rand, sources []string, session, receiverSessions map[string]string, at int64) []byte {
	src := "omega"
	if rng.IntN(12) > 0 {
		src = sources[rng.IntN(len(sources))]
	}
	recv := fmt.Sprintf("r%d", rng.IntN(3))
	if rng.IntN(30) == 0 {
		recv = ""
	}
	sess := fmt.Sprintf("v%d", rng.IntN(3))
	if rng.IntN(30) == 0 {
		sess = ""
	}
	key := src + "/" + recv
	k := rng.IntN(10)
	if last, ok := receiverSessions[key]; ok && k >= 4 && k < 9 && rng.IntN(10) < 7 {
		sess = last
	}
	switch {
	case k < 4:
		receiverSessions[key] = sess
		return EncodeRegisterReceiver(RegisterReceiver{Source: src, Receiver: recv, Session: sess, Paced: rng.IntN(2) == 0, UnixNano: at})
	case k < 7:
		return EncodeExpireReceiver(ExpireReceiver{Source: src, Receiver: recv, Session: sess, UnixNano: at})
	case k < 9:
		return EncodeForgetReceiver(ForgetReceiver{Source: src, Receiver: recv, Session: sess, UnixNano: at})
	default:
		if src != "omega" {
			session[src] = sess
		}
		return EncodeRegisterPaced(RegisterPaced{Register: Register{Source: src, Session: sess, UnixNano: at}, Pacing: Pacing(rng.IntN(4))})
	}
}

// applyReceiver is the model's rule for the receiver commands: a
// registration makes the receiver active on its session with its pacing,
// keeping the position; an expiry makes the active receiver on that session
// inactive; a forget deletes the inactive receiver on that session; a paced
// registration is a registration that records the mode. It reports whether
// cmd was one of them.
func (m *model) applyReceiver(cmd any) bool {
	rec := func(source, receiver string) (ReceiverPosition, bool) {
		p, ok := m.receivers[source][receiver]
		return p, ok
	}
	held := func(source, receiver, session string) bool {
		return m.msgs[source] != nil && receiver != "" && session != ""
	}
	switch c := cmd.(type) {
	case RegisterReceiver:
		if !held(c.Source, c.Receiver, c.Session) {
			return true
		}
		p, _ := rec(c.Source, c.Receiver)
		p.Receiver, p.Session, p.Paced, p.Active, p.RegisteredUnixNano = c.Receiver, c.Session, c.Paced, true, c.UnixNano
		if m.receivers[c.Source] == nil {
			m.receivers[c.Source] = map[string]ReceiverPosition{}
		}
		m.receivers[c.Source][c.Receiver] = p
	case ExpireReceiver:
		if !held(c.Source, c.Receiver, c.Session) {
			return true
		}
		if p, ok := rec(c.Source, c.Receiver); ok && p.Session == c.Session && p.Active {
			p.Active, p.ExpiredUnixNano = false, c.UnixNano
			m.receivers[c.Source][c.Receiver] = p
		}
	case ForgetReceiver:
		if !held(c.Source, c.Receiver, c.Session) {
			return true
		}
		if p, ok := rec(c.Source, c.Receiver); ok && p.Session == c.Session && !p.Active {
			delete(m.receivers[c.Source], c.Receiver)
		}
	case RegisterPaced:
		if c.Source == "" || c.Pacing > PacingNonBlocking {
			return true
		}
		m.apply(Entry{Data: EncodeRegister(c.Register)})
		m.pacing[c.Source] = c.Pacing
	default:
		return false
	}
	return true
}

// receiverOutcome names what a receiver command did, for
// TestRandomLogCoversEveryOutcome.
func receiverOutcome(x *ReceiverResult, t CommandType) string {
	switch {
	case t == CmdRegisterReceiver && x.Created:
		return "receiver-registered-new"
	case t == CmdRegisterReceiver:
		return "receiver-registered-again"
	case t == CmdExpireReceiver && x.Changed:
		return "receiver-expired"
	case t == CmdExpireReceiver:
		return "receiver-expire-no-op"
	case t == CmdForgetReceiver && x.Changed:
		return "receiver-forgotten"
	default:
		return "receiver-forget-no-op"
	}
}
