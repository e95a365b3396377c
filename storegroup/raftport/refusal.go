package raftport

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// Refusal is why a connection to the raft port was closed before raft
// read a byte: the label reason of umstore_raft_peers_refused_total.
type Refusal int

const (
	refusedTimeout     Refusal = iota // no proof before Config.HandshakeTimeout
	refusedProtocol                   // not a member handshake (raft's own framing, a port scan, an older store)
	refusedSecret                     // a member handshake with a wrong proof: another secret
	refusedNotMember                  // a name that is not another member of the group
	refusedTLS                        // the TLS handshake failed (no certificate, another CA)
	refusedCertificate                // a certificate that is not a store's for the peer's host
	refusedAddress                    // from an address that is no member's host
	refusedBusy                       // too many connections still proving membership

	// NumRefusals is the number of reasons: Refusal(0) to
	// Refusal(NumRefusals-1), for an array of counters.
	NumRefusals
)

var peerRefusalNames = [NumRefusals]string{"timeout", "protocol", "secret", "not_member", "tls", "certificate", "address", "busy"}

// String is the reason's label value in umstore_raft_peers_refused_total.
func (r Refusal) String() string { return peerRefusalNames[r] }

// refusalLogEvery is the least time between two log lines about refused
// raft connections from one remote address; those in between are counted
// in the next line.
const refusalLogEvery = 30 * time.Second

// maxRefusalSources bounds the addresses refusalLog remembers: a flood
// from many addresses logs one line per address at most until the memory
// is cleared, then starts over.
const maxRefusalSources = 4096

// refusalLog counts every refused raft connection and logs it, at most
// once per remote address every refusalLogEvery, so a stranger knocking
// in a loop cannot flood the log.
type refusalLog struct {
	log   *slog.Logger
	count func(Refusal)

	mu   sync.Mutex
	last map[string]*refusalSource // by remote IP
}

type refusalSource struct {
	logged     time.Time
	suppressed int // refusals not logged since
}

func newRefusalLog(log *slog.Logger, count func(Refusal)) *refusalLog {
	return &refusalLog{log: log, count: count, last: map[string]*refusalSource{}}
}

// refuse counts a refused connection from remote and logs it unless a
// line for that address was logged less than refusalLogEvery ago.
func (l *refusalLog) refuse(remote net.Addr, why Refusal, err error) {
	if l.count != nil {
		l.count(why)
	}
	ip := RemoteIP(remote)
	now := time.Now()
	l.mu.Lock()
	src := l.last[ip]
	if src != nil && now.Sub(src.logged) < refusalLogEvery {
		src.suppressed++
		l.mu.Unlock()
		return
	}
	if src == nil {
		if len(l.last) >= maxRefusalSources {
			l.last = map[string]*refusalSource{}
		}
		src = &refusalSource{}
		l.last[ip] = src
	}
	suppressed := src.suppressed
	src.logged, src.suppressed = now, 0
	l.mu.Unlock()
	l.log.Warn("refused a raft connection: the peer did not prove it is a member of this group; if it is one, check that every host has the same deployment file and member secret file, and restart the hosts that do not",
		"remote", remote.String(), "reason", why.String(), "err", err, "refused_since_last_line", suppressed)
}
