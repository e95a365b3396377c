package repository

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// memberEntry draws a MemberAddress for randomLog: one of three members,
// at one of a few addresses (so the same addresses come again, and a later
// move replaces an earlier one), rarely without a name or an address
// (refused).
func memberEntry(rng *rand.Rand, at int64) []byte {
	c := MemberAddress{
		Name:       fmt.Sprintf("G1S%d", 1+rng.IntN(3)),
		RaftAddr:   fmt.Sprintf("10.0.0.%d:14011", 1+rng.IntN(3)),
		ClientAddr: fmt.Sprintf("10.0.0.%d:15011", 1+rng.IntN(2)),
		UnixNano:   at,
	}
	switch rng.IntN(20) {
	case 0:
		c.Name = ""
	case 1:
		c.RaftAddr = ""
	case 2:
		c.ClientAddr = ""
	}
	return EncodeMemberAddress(c)
}

// applyMember is the model's rule for MemberAddress: a record needs a name
// and both addresses; the same addresses again change nothing (not even
// the time); other addresses replace the record. It reports whether cmd
// was one.
func (m *model) applyMember(cmd any) bool {
	c, ok := cmd.(MemberAddress)
	if !ok {
		return false
	}
	if c.Name == "" || c.RaftAddr == "" || c.ClientAddr == "" {
		return true
	}
	if cur, had := m.members[c.Name]; had && cur.RaftAddr == c.RaftAddr && cur.ClientAddr == c.ClientAddr {
		return true
	}
	m.members[c.Name] = MemberAddressRecord{Name: c.Name, RaftAddr: c.RaftAddr, ClientAddr: c.ClientAddr, SinceUnixNano: c.UnixNano}
	return true
}

// checkMembers compares the repository's member records with the model's.
func (m *model) checkMembers(t *testing.T, r *Repo) {
	t.Helper()
	got, err := r.MemberAddresses()
	if err != nil {
		t.Fatal(err)
	}
	var want []MemberAddressRecord
	for _, name := range []string{"G1S1", "G1S2", "G1S3"} { // name order, as MemberAddresses
		if rec, ok := m.members[name]; ok {
			want = append(want, rec)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("member records:\n  got  %+v\n  want %+v", got, want)
	}
}

// memberOutcomes names what each MemberAddress of log did, by raft index,
// for TestRandomLogCoversEveryOutcome: recorded, the same again, refused.
func memberOutcomes(log []Entry, res []Result) map[uint64]string {
	byIndex := map[uint64]Result{}
	for _, x := range res {
		byIndex[x.Index] = x
	}
	out := map[uint64]string{}
	last := map[string]MemberAddress{}
	for _, e := range log {
		if len(e.Data) == 0 || CommandType(e.Data[0]) != CmdMemberAddress {
			continue
		}
		cmd, err := DecodeCommand(e.Data)
		if err != nil {
			continue
		}
		c := cmd.(MemberAddress)
		prev, had := last[c.Name]
		switch {
		case byIndex[e.Index].Err != nil:
			out[e.Index] = "member-refused"
		case had && prev.RaftAddr == c.RaftAddr && prev.ClientAddr == c.ClientAddr:
			out[e.Index] = "member-same"
		case had:
			out[e.Index] = "member-moved-again"
			last[c.Name] = c
		default:
			out[e.Index] = "member-recorded"
			last[c.Name] = c
		}
	}
	return out
}
