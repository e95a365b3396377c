package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"umstore/placement"
	"umstore/repository"
	"umstore/wire"
)

// strangerEnv carries a stranger's configuration (JSON). When it is set,
// the chaos binary (or the chaos test binary) runs as the stranger: a
// process that is not a member of the deployment and sends the stores of
// one host forged and malformed traffic.
const strangerEnv = "UMSTORE_CHAOS_STRANGER"

// strangerMarker starts every payload the stranger sends, and
// strangerSourcePrefix every source name it makes up: the checker
// recognises them wherever they turn up.
const (
	strangerMarker       = "chaos-stranger "
	strangerSourcePrefix = "zz-stranger"
)

// strangerAddr is the loopback address the stranger sends from: neither
// host's, so it is no member whatever port it uses, and the partition rules
// (which match the hosts' addresses) never touch it.
const strangerAddr = "127.0.0.4"

// strangerConfig configures one stranger run.
type strangerConfig struct {
	Deployment string `json:"deployment"`
	// Host is the host whose stores it sends to.
	Host string `json:"host"`
	// Highs is, for each real source, the highest sequence number
	// acknowledged when the stranger started: it publishes past it.
	Highs map[string]uint64 `json:"highs"`
	Seed  uint64            `json:"seed"`
	// For is how long it keeps sending.
	For time.Duration `json:"for"`
}

// strangerPayload is the n-th payload the stranger sends.
func strangerPayload(n int) []byte {
	s := fmt.Sprintf("%spid=%d n=%d ", strangerMarker, os.Getpid(), n)
	if len(s) < payloadSize {
		s += strings.Repeat("!", payloadSize-len(s))
	}
	return []byte(s)
}

// stranger is one stranger run: what it knows and how it reports.
type stranger struct {
	cfg   strangerConfig
	dep   *placement.Deployment
	rng   *rand.Rand
	trans *raft.NetworkTransport
	out   *json.Encoder
	outMu sync.Mutex
	sent  int // payloads made so far

	flooded map[int]bool // the groups a Register flood went to (stranger_flood.go)
}

// strangerMain runs the stranger: round after round, for cfg.For, it sends
// every store of cfg.Host forged raft RPCs (AppendEntries carrying
// repository commands, RequestVote, TimeoutNow, InstallSnapshot, with
// hashicorp/raft's own TCP transport, posing as a member), malformed raft
// frames, Publish frames without a registration, oversized, truncated
// and malformed client frames, and registrations and acknowledgements
// that would take what other clients own (stranger_client.go); it prints each act and its answer as one
// JSON line (a StrangerAct).
func strangerMain(config string) int {
	var cfg strangerConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "stranger: bad configuration:", err)
		return 2
	}
	dep, err := placement.Load(cfg.Deployment)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stranger:", err)
		return 2
	}
	trans, err := raft.NewTCPTransportWithLogger(strangerAddr+":0", nil, 2, 3*time.Second, hclog.NewNullLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "stranger: raft transport:", err)
		return 2
	}
	defer trans.Close()
	s := &stranger{cfg: cfg, dep: dep, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5742)), trans: trans, out: json.NewEncoder(os.Stdout)}
	deadline := time.Now().Add(cfg.For)
	for round := 1; round == 1 || time.Now().Before(deadline); round++ {
		stores := dep.StoresOn(cfg.Host)
		s.rng.Shuffle(len(stores), func(i, j int) { stores[i], stores[j] = stores[j], stores[i] })
		for _, st := range stores {
			s.round(st, round == 1)
		}
		time.Sleep(min(time.Second, max(time.Until(deadline), 0)))
	}
	// Last, what may crash a store outright, so that every store has had
	// everything else first.
	for _, st := range dep.StoresOn(cfg.Host) {
		s.installSnapshot(st, true)
	}
	return 0
}

// report prints one act.
func (s *stranger) report(st placement.StoreRef, port, act string, accepted bool, detail string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(StrangerAct{At: time.Now(), Store: st.Store.Name, Port: port, Act: act, Accepted: accepted, Detail: fmt.Sprintf(detail, args...)})
}

// payloads makes n new stranger payloads.
func (s *stranger) payloads(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		s.sent++
		out[i] = strangerPayload(s.sent)
	}
	return out
}

// round sends one store everything once, but the snapshot that does not
// decode (strangerMain sends it last). The acts that disturb the group
// most (a newer term, a vote, a forced election, a snapshot) come only in
// the first round, and last in it.
func (s *stranger) round(st placement.StoreRef, first bool) {
	s.appendSameTerm(st)
	s.publishUnregistered(st)
	s.malformedClient(st)
	s.lastEpochs(st) // stranger_client.go
	if !first {
		return
	}
	s.receiverSpoofs(st)
	s.seqJumpOwn(st) // stranger_flood.go
	if !s.flooded[st.Group] {
		if s.flooded == nil {
			s.flooded = map[int]bool{}
		}
		s.flooded[st.Group] = true
		s.registerFlood(st) // stranger_flood.go: once per group
	}
	s.appendNextTerm(st)
	s.requestVote(st)
	s.timeoutNow(st)
	s.malformedRaft(st)
	s.installSnapshot(st, false)
}

// posingAs is the member of st's group the stranger claims to be: another
// store of the group (a follower believes whoever says it leads).
func (s *stranger) posingAs(st placement.StoreRef) string {
	for _, m := range s.dep.Members(st.Group) {
		if m.Store.Name != st.Store.Name {
			return m.Store.Name
		}
	}
	return "stranger"
}

func (s *stranger) header(st placement.StoreRef) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(s.posingAs(st)), Addr: []byte(s.trans.LocalAddr())}
}

// probe asks the store its term and last log index with an AppendEntries of
// term 0, which any raft node answers without changing anything.
func (s *stranger) probe(st placement.StoreRef) (term, last uint64, err error) {
	var resp raft.AppendEntriesResponse
	err = s.trans.AppendEntries(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), &raft.AppendEntriesRequest{RPCHeader: s.header(st)}, &resp)
	return resp.Term, resp.LastLog, err
}

// commands are the repository commands the stranger's forged entries
// carry: a registration and a Publish of a source of its own, a Publish of
// stranger payloads past a real source's acknowledged messages, and a Trim
// of a real source.
func (s *stranger) commands(withTrim bool) [][]byte {
	now := time.Now().UnixNano()
	src := strangerSourcePrefix + "-raft"
	cmds := [][]byte{
		repository.EncodeRegister(repository.Register{Source: src, Session: "stranger", UnixNano: now}),
		repository.EncodePublish(repository.Publish{Source: src, FirstSeq: uint64(s.sent + 1), Payloads: s.payloads(3)}),
	}
	for _, real := range sortedSources(s.cfg.Highs) {
		high := s.cfg.Highs[real]
		cmds = append(cmds, repository.EncodePublish(repository.Publish{Source: real, FirstSeq: high + 400 + uint64(s.rng.IntN(400)), Payloads: s.payloads(2)}))
		if withTrim && high > 2 {
			cmds = append(cmds, repository.EncodeTrim(repository.Trim{Source: real, Through: high / 2, Reason: "stranger", UnixNano: now}))
		}
	}
	return cmds
}

// entries makes raft log entries of cmds from index first on, in term.
func entries(cmds [][]byte, first, term uint64) []*raft.Log {
	out := make([]*raft.Log, len(cmds))
	for i, c := range cmds {
		out[i] = &raft.Log{Index: first + uint64(i), Term: term, Type: raft.LogCommand, Data: c, AppendedAt: time.Now()}
	}
	return out
}

// appendSameTerm poses as the group's leader in the store's current term:
// it appends entries after the store's last one and tells it they are
// committed. A follower that takes it applies the stranger's commands, and
// later skips the real leader's entries at those indexes as duplicates.
// The real leader appends too, so it tries a few times.
func (s *stranger) appendSameTerm(st placement.StoreRef) {
	const act = "AppendEntries in the store's term, posing as a member, with Register, Publish and a Publish past a real source's messages"
	for attempt := 0; attempt < 5; attempt++ {
		term, last, err := s.probe(st)
		if err != nil {
			s.report(st, "raft", act, false, "probe: %v", err)
			return
		}
		for prevTerm := term; prevTerm+3 > term && prevTerm > 0; prevTerm-- {
			req := &raft.AppendEntriesRequest{RPCHeader: s.header(st), Term: term, PrevLogEntry: last, PrevLogTerm: prevTerm,
				Entries: entries(s.commands(false), last+1, term), LeaderCommitIndex: last + 3}
			var resp raft.AppendEntriesResponse
			err := s.trans.AppendEntries(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), req, &resp)
			if err != nil {
				s.report(st, "raft", act, false, "%v", err)
				return
			}
			if resp.Success {
				s.report(st, "raft", act, true, "term %d, entries from index %d: answered success, last log now %d", term, last+1, resp.LastLog)
				return
			}
			if resp.LastLog != last {
				break // the real leader appended meanwhile: probe again
			}
		}
	}
	s.report(st, "raft", act, false, "refused five times")
}

// appendNextTerm poses as the leader of a newer term: the store steps down
// to follow it, and its log then ends in the stranger's entries, in a term
// newer than any other member's, so it wins the next election with them.
func (s *stranger) appendNextTerm(st placement.StoreRef) {
	const act = "AppendEntries in a newer term, posing as a member, with Register, Publish and a Trim of a real source"
	term, last, err := s.probe(st)
	if err != nil {
		s.report(st, "raft", act, false, "probe: %v", err)
		return
	}
	cmds := s.commands(true)
	for prevTerm := term; prevTerm+3 > term && prevTerm > 0; prevTerm-- {
		req := &raft.AppendEntriesRequest{RPCHeader: s.header(st), Term: term + 1, PrevLogEntry: last, PrevLogTerm: prevTerm,
			Entries: entries(cmds, last+1, term+1), LeaderCommitIndex: last + uint64(len(cmds))}
		var resp raft.AppendEntriesResponse
		if err := s.trans.AppendEntries(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), req, &resp); err != nil {
			s.report(st, "raft", act, false, "%v", err)
			return
		}
		if resp.Success {
			s.report(st, "raft", act, true, "term %d, entries from index %d: answered success", term+1, last+1)
			return
		}
	}
	s.report(st, "raft", act, false, "refused")
}

// requestVote asks for the store's vote in a newer term, for a leadership
// transfer (which raft grants despite a known leader), posing as a member
// with a log longer than anyone's.
func (s *stranger) requestVote(st placement.StoreRef) {
	const act = "RequestVote in a newer term, posing as a member, as a leadership transfer"
	term, last, err := s.probe(st)
	if err != nil {
		s.report(st, "raft", act, false, "probe: %v", err)
		return
	}
	req := &raft.RequestVoteRequest{RPCHeader: s.header(st), Term: term + 2, LastLogIndex: last + 1000, LastLogTerm: term + 2, LeadershipTransfer: true}
	var resp raft.RequestVoteResponse
	if err := s.trans.RequestVote(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), req, &resp); err != nil {
		s.report(st, "raft", act, false, "%v", err)
		return
	}
	s.report(st, "raft", act, resp.Granted, "term %d: granted=%v (store's term now %d)", term+2, resp.Granted, resp.Term)
}

// timeoutNow tells the store to start an election at once, as a leader
// transferring its leadership does. Raft obeys before it answers, so an
// answer means it obeyed.
func (s *stranger) timeoutNow(st placement.StoreRef) {
	const act = "TimeoutNow, posing as a member"
	var resp raft.TimeoutNowResponse
	err := s.trans.TimeoutNow(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), &raft.TimeoutNowRequest{RPCHeader: s.header(st)}, &resp)
	if err != nil {
		s.report(st, "raft", act, false, "%v", err)
		return
	}
	s.report(st, "raft", act, true, "answered: the store started an election on a stranger's word")
}

// installSnapshot sends a snapshot of garbage in a newer term: with the
// group's real configuration, or (badConf) with a configuration that does
// not decode.
func (s *stranger) installSnapshot(st placement.StoreRef, badConf bool) {
	var servers []raft.Server
	for _, m := range s.dep.Members(st.Group) {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.Store.Name), Address: raft.ServerAddress(m.RaftAddr())})
	}
	c := struct {
		act  string
		conf []byte
	}{"InstallSnapshot of garbage in a newer term, with the group's configuration", raft.EncodeConfiguration(raft.Configuration{Servers: servers})}
	if badConf {
		c.act, c.conf = "InstallSnapshot in a newer term with a configuration that does not decode", []byte{0xc1, 0xc1, 0xc1}
	}
	term, last, err := s.probe(st)
	if err != nil {
		s.report(st, "raft", c.act, false, "probe: %v", err)
		return
	}
	data := bytes.Repeat(strangerPayload(0), 64)
	req := &raft.InstallSnapshotRequest{RPCHeader: s.header(st), SnapshotVersion: raft.SnapshotVersionMax, Term: term + 1,
		LastLogIndex: last + 10, LastLogTerm: term + 1, Configuration: c.conf, ConfigurationIndex: 1, Size: int64(len(data))}
	var resp raft.InstallSnapshotResponse
	err = s.trans.InstallSnapshot(raft.ServerID(st.Store.Name), raft.ServerAddress(st.RaftAddr()), req, &resp, bytes.NewReader(data))
	if err != nil {
		s.report(st, "raft", c.act, false, "%v", err)
		return
	}
	s.report(st, "raft", c.act, resp.Success, "success=%v", resp.Success)
}

// malformedRaft sends the raft port bytes that are not raft: garbage, an
// AppendEntries cut short, and one announcing a 256 MiB field it never
// sends.
func (s *stranger) malformedRaft(st placement.StoreRef) {
	garbage := make([]byte, 256)
	for i := range garbage {
		garbage[i] = byte(s.rng.IntN(256))
	}
	// rpcAppendEntries (0), then a msgpack map of one entry whose key is
	// "Leader" and whose value is a bin32 of 256 MiB.
	huge := []byte{0, 0x81, 0xa6, 'L', 'e', 'a', 'd', 'e', 'r', 0xc6}
	huge = binary.BigEndian.AppendUint32(huge, 256<<20)
	huge = append(huge, bytes.Repeat([]byte{'x'}, 4096)...)
	for _, c := range []struct {
		act  string
		data []byte
	}{
		{"256 bytes of garbage on the raft port", garbage},
		{"an AppendEntries cut short", []byte{0, 0x89, 0xa9, 'R', 'P', 'C', 'H'}},
		{"an AppendEntries announcing a 256 MiB field it never sends", huge},
	} {
		s.raw(st, "raft", st.RaftAddr(), c.act, c.data)
	}
}

// raw connects to addr, writes data, and reports whether the store kept
// the connection open or answered.
func (s *stranger) raw(st placement.StoreRef, port, addr, act string, data []byte) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(strangerAddr)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		s.report(st, port, act, false, "connect: %v", err)
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	_, werr := nc.Write(data)
	buf := make([]byte, 64)
	n, rerr := nc.Read(buf)
	s.report(st, port, act, false, "write: %v; answer: %d bytes (%v)", werr, n, rerr)
}

// publishUnregistered publishes without registering: a source of its own
// from sequence number 1, and stranger payloads past a real source's
// acknowledged messages; first without even a Hello. It follows a
// redirection to the leader once.
func (s *stranger) publishUnregistered(st placement.StoreRef) {
	dialer := &wire.Dialer{Client: "chaos stranger", LocalIP: net.ParseIP(strangerAddr), Timeout: 2 * time.Second}
	pubs := []*wire.Publish{{ReqID: 1, Source: strangerSourcePrefix + "-client", FirstSeq: uint64(s.sent + 1), Payloads: s.payloads(2)}}
	for _, real := range sortedSources(s.cfg.Highs) {
		pubs = append(pubs, &wire.Publish{ReqID: 2, Source: real, FirstSeq: s.cfg.Highs[real] + 400 + uint64(s.rng.IntN(400)), Payloads: s.payloads(1)})
	}
	for _, p := range pubs {
		act := "Publish without Register to a source of its own"
		if !strings.HasPrefix(p.Source, strangerSourcePrefix) {
			act = "Publish without Register past a real source's messages"
		}
		addr := st.ClientAddr()
		for hop := 0; hop < 2; hop++ {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			c, _, err := dialer.Dial(ctx, addr)
			cancel()
			if err != nil {
				s.report(st, "client", act, false, "%v", err)
				break
			}
			_ = c.NetConn().SetDeadline(time.Now().Add(3 * time.Second))
			err = c.Send(p)
			var m wire.Message
			if err == nil {
				m, err = c.Read()
			}
			c.Close()
			if nl, ok := m.(*wire.NotLeader); ok && nl.Leader != "" && hop == 0 {
				addr = nl.Leader
				continue
			}
			switch m := m.(type) {
			case *wire.Ack:
				s.report(st, "client", act, true, "source %s from %d at %s: acknowledged %d-%d", p.Source, p.FirstSeq, addr, m.FirstSeq, m.LastSeq)
			case *wire.Error:
				s.report(st, "client", act, false, "source %s at %s: refused (%s) %s", p.Source, addr, m.Code, m.Message)
			default:
				s.report(st, "client", act, false, "source %s at %s: answer %T, %v", p.Source, addr, m, err)
			}
			break
		}
	}
	// A Publish frame before any Hello.
	frame, err := wire.Encode(&wire.Publish{ReqID: 3, Source: strangerSourcePrefix + "-nohello", FirstSeq: 1, Payloads: s.payloads(1)})
	if err == nil {
		s.rawAnswer(st, "a Publish before any Hello", frame)
	}
}

// rawAnswer sends a frame on a fresh client connection and reports whether
// the store acknowledged it.
func (s *stranger) rawAnswer(st placement.StoreRef, act string, frame []byte) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(strangerAddr)}}
	nc, err := d.Dial("tcp", st.ClientAddr())
	if err != nil {
		s.report(st, "client", act, false, "connect: %v", err)
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		s.report(st, "client", act, false, "write: %v", err)
		return
	}
	c := wire.NewConn(nc, 0)
	m, err := c.Read()
	_, acked := m.(*wire.Ack)
	s.report(st, "client", act, acked, "answer %T (%v)", m, err)
}

// malformedClient sends the client port frames no client should: one
// longer than any limit, one cut short, one of an unknown type, one whose
// body is not msgpack, each after a proper Hello.
func (s *stranger) malformedClient(st placement.StoreRef) {
	hello, err := wire.Encode(&wire.Hello{Version: wire.Version, Client: "chaos stranger"})
	if err != nil {
		return
	}
	frame := func(typ byte, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(1+len(body)))
		return append(append(b, typ), body...)
	}
	cut := frame(byte(wire.TypePublish), bytes.Repeat([]byte{0x95}, 1000))[:40]
	for _, c := range []struct {
		act  string
		data []byte
	}{
		{"a frame announcing 4 GiB", binary.BigEndian.AppendUint32(nil, 0xffffffff)},
		{"a frame of 1000 bytes cut after 36", cut},
		{"a frame of an unknown type", frame(0xee, []byte{0x90})},
		{"a Publish whose body is not msgpack", frame(byte(wire.TypePublish), []byte{0xc1, 0xc1, 0xc1, 0xc1})},
	} {
		s.raw(st, "client", st.ClientAddr(), c.act, append(slices.Clone(hello), c.data...))
	}
}
