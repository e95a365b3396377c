package repository

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// model is a deliberately simple reference implementation of the apply
// rules: the first payload stored for a sequence number wins; a receiver's
// position is the highest one consumed, with the time it was first recorded;
// a trim deletes everything at or below the lower of its Through and the
// highest sequence number ever stored, and nothing at or below the highest
// such point is stored again; a session is expired only if it is the one
// the last registration (or expiry) left; a source is forgotten whole only
// if no session holds it, the one freed last is the one named, and it
// never held a message or a receiver's record.
type model struct {
	msgs      map[string]map[uint64][]byte
	regs      map[string]Register
	created   map[string]int64
	receivers map[string]map[string]ReceiverPosition
	high      map[string]uint64 // highest sequence number ever stored
	trimmed   map[string]uint64
	session   map[string]string        // the current session: the last registered, "" once expired
	expired   map[string]ExpireSession // the last expiry that took effect
	pacing    map[string]Pacing        // the last RegisterPaced's mode
	members   map[string]MemberAddressRecord
}

func newModel() *model {
	return &model{
		msgs: map[string]map[uint64][]byte{}, regs: map[string]Register{}, created: map[string]int64{},
		receivers: map[string]map[string]ReceiverPosition{}, high: map[string]uint64{}, trimmed: map[string]uint64{},
		session: map[string]string{}, expired: map[string]ExpireSession{}, pacing: map[string]Pacing{},
		members: map[string]MemberAddressRecord{},
	}
}

func (m *model) apply(e Entry) {
	if len(e.Data) == 0 {
		return
	}
	cmd, err := DecodeCommand(e.Data)
	if err != nil {
		return
	}
	if m.applyReceiver(cmd) || m.applyMember(cmd) {
		return
	}
	switch c := cmd.(type) {
	case Register:
		if m.msgs[c.Source] == nil {
			m.msgs[c.Source] = map[uint64][]byte{}
			m.created[c.Source] = c.UnixNano
		}
		m.regs[c.Source] = c
		m.session[c.Source] = c.Session
	case ExpireSession:
		if m.msgs[c.Source] == nil || c.Session == "" || m.session[c.Source] != c.Session {
			return
		}
		m.session[c.Source] = ""
		m.expired[c.Source] = c
	case ForgetSource:
		if m.msgs[c.Source] == nil || c.Session == "" || m.session[c.Source] != "" || m.expired[c.Source].Session != c.Session ||
			m.high[c.Source] != 0 || m.trimmed[c.Source] != 0 || len(m.receivers[c.Source]) != 0 {
			return
		}
		delete(m.msgs, c.Source)
		delete(m.regs, c.Source)
		delete(m.created, c.Source)
		delete(m.receivers, c.Source)
		delete(m.high, c.Source)
		delete(m.trimmed, c.Source)
		delete(m.session, c.Source)
		delete(m.expired, c.Source)
		delete(m.pacing, c.Source)
	case Publish:
		if c.FirstSeq > MaxSeq || uint64(len(c.Payloads))-1 > MaxSeq-c.FirstSeq {
			return // above the ceiling: refused, nothing created
		}
		if m.msgs[c.Source] == nil {
			m.msgs[c.Source] = map[uint64][]byte{}
		}
		for i, p := range c.Payloads {
			seq := c.FirstSeq + uint64(i)
			if _, ok := m.msgs[c.Source][seq]; !ok && seq > m.trimmed[c.Source] {
				m.msgs[c.Source][seq] = append([]byte{}, p...)
				m.high[c.Source] = max(m.high[c.Source], seq)
			}
		}
	case Trim:
		if m.msgs[c.Source] == nil || c.Through == 0 {
			return
		}
		through := min(c.Through, m.high[c.Source])
		if through <= m.trimmed[c.Source] {
			return
		}
		for seq := range m.msgs[c.Source] {
			if seq <= through {
				delete(m.msgs[c.Source], seq)
			}
		}
		m.trimmed[c.Source] = through
	case Consumed:
		if m.msgs[c.Source] == nil || c.Receiver == "" || c.Seq == 0 {
			return
		}
		if m.receivers[c.Source] == nil {
			m.receivers[c.Source] = map[string]ReceiverPosition{}
		}
		if cur := m.receivers[c.Source][c.Receiver]; c.Seq > cur.Seq {
			cur.Receiver, cur.Seq, cur.UnixNano = c.Receiver, c.Seq, c.UnixNano
			m.receivers[c.Source][c.Receiver] = cur
		}
	}
}

// check compares the repository with the model: every message, the
// bookkeeping derived from the set of held sequence numbers, every
// receiver position, and the member records.
func (m *model) check(t *testing.T, r *Repo) {
	t.Helper()
	m.checkMembers(t, r)
	infos, err := r.Sources()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(m.msgs) {
		t.Fatalf("repository has %d sources, model %d", len(infos), len(m.msgs))
	}
	for _, info := range infos {
		held := m.msgs[info.Name]
		var want SourceInfo
		want.Name = info.Name
		want.HighSeq, want.TrimmedThrough = m.high[info.Name], m.trimmed[info.Name]
		for seq, p := range held {
			want.Count++
			want.Bytes += uint64(len(p))
			if want.LowSeq == 0 || seq < want.LowSeq {
				want.LowSeq = seq
			}
		}
		for seq := want.TrimmedThrough + 1; seq <= want.HighSeq; seq++ {
			if _, ok := held[seq]; ok {
				continue
			}
			if n := len(want.Gaps); n > 0 && want.Gaps[n-1].To == seq-1 {
				want.Gaps[n-1].To = seq
			} else {
				want.Gaps = append(want.Gaps, Range{seq, seq})
			}
		}
		if reg, ok := m.regs[info.Name]; ok {
			want.LastRegisterUnixNano = reg.UnixNano
		}
		want.Session = m.session[info.Name]
		if x, ok := m.expired[info.Name]; ok {
			want.ExpiredSession, want.ExpiredUnixNano = x.Session, x.UnixNano
		}
		want.CreatedUnixNano = m.created[info.Name]
		if !reflect.DeepEqual(info, want) {
			t.Errorf("source %s:\n  got  %+v\n  want %+v", info.Name, info, want)
		}
		msgs, err := r.Read(info.Name, 0, ^uint64(0), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != len(held) {
			t.Errorf("source %s: read %d messages, model holds %d", info.Name, len(msgs), len(held))
		}
		for _, msg := range msgs {
			if string(held[msg.Seq]) != string(msg.Payload) {
				t.Errorf("source %s seq %d: payload differs from the first one published", info.Name, msg.Seq)
			}
		}
		positions, err := r.Receivers(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		wantPositions := []ReceiverPosition{}
		for _, p := range m.receivers[info.Name] {
			wantPositions = append(wantPositions, p)
		}
		slices.SortFunc(wantPositions, func(a, b ReceiverPosition) int { return strings.Compare(a.Receiver, b.Receiver) })
		if !reflect.DeepEqual(positions, wantPositions) {
			t.Errorf("source %s receivers:\n  got  %+v\n  want %+v", info.Name, positions, wantPositions)
		}
		if st, err := r.Pacing(info.Name); err != nil || st.Mode != m.pacing[info.Name] {
			t.Errorf("source %s pacing %v (%v), want %v", info.Name, st.Mode, err, m.pacing[info.Name])
		}
	}
}
