package repository

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// CmdMemberAddress records where a member of the group listens now: its
// raft and client addresses, changed when its host was replaced by a
// server at another address. Every member applies it, so probes, repair,
// redirects and status reach the member where it is, whatever deployment
// file each host was started with.
const CmdMemberAddress CommandType = 15

// MemberAddress is the replicated record of one member's addresses,
// proposed by the group's leader once it has accepted the member's move.
// Recording the addresses already recorded changes nothing, so the leader
// may resend freely. The repository does not judge addresses (the leader
// did); it only refuses a record without a name or an address.
type MemberAddress struct {
	Name       string // the member's store name (its raft server ID)
	RaftAddr   string // host:port of its raft transport
	ClientAddr string // host:port of its client server
	UnixNano   int64  // when the leader accepted the move, stamped by the proposer
}

// MemberAddressRecord is what the repository holds for one member.
type MemberAddressRecord struct {
	Name          string
	RaftAddr      string
	ClientAddr    string
	SinceUnixNano int64 // UnixNano of the entry that recorded these addresses
}

// memberAddressFields is the number of elements of a MemberAddress body:
// [Name str, RaftAddr str, ClientAddr str, UnixNano int].
const memberAddressFields = 4

// bucketMembers holds the member records, inside meta, keyed by store name:
// msgpack memberRecord. It exists once a MemberAddress took effect.
var bucketMembers = []byte("members")

// memberRecord is a MemberAddressRecord as written to the file: a msgpack
// map with short keys, so fields can be added without a format change.
type memberRecord struct {
	Raft   string `msgpack:"r"`
	Client string `msgpack:"c"`
	Since  int64  `msgpack:"t,omitempty"`
}

// EncodeMemberAddress returns the replicated form of c.
func EncodeMemberAddress(c MemberAddress) []byte {
	n := 1 + sizeArrayLen(memberAddressFields) + sizeString(len(c.Name)) + sizeString(len(c.RaftAddr)) + sizeString(len(c.ClientAddr)) + sizeInt(c.UnixNano)
	b := make([]byte, 0, n)
	b = append(b, byte(CmdMemberAddress))
	b = appendArrayLen(b, memberAddressFields)
	b = appendString(b, c.Name)
	b = appendString(b, c.RaftAddr)
	b = appendString(b, c.ClientAddr)
	return appendInt(b, c.UnixNano)
}

func decodeMemberAddress(r *mpReader) MemberAddress {
	var c MemberAddress
	expectFields(r, CmdMemberAddress, memberAddressFields)
	c.Name = r.str()
	c.RaftAddr = r.str()
	c.ClientAddr = r.str()
	c.UnixNano = r.int()
	return c
}

// memberAddress records a member's addresses. The same addresses again
// change nothing, not even their time.
func (a *applier) memberAddress(c MemberAddress, res *Result) error {
	if c.Name == "" || c.RaftAddr == "" || c.ClientAddr == "" {
		res.Err = fmt.Errorf("%w: MemberAddress needs a store name and both addresses, got %q, %q, %q", ErrBadCommand, c.Name, c.RaftAddr, c.ClientAddr)
		return nil
	}
	b, err := a.meta.CreateBucketIfNotExists(bucketMembers)
	if err != nil {
		return err
	}
	if v := b.Get([]byte(c.Name)); v != nil {
		cur, err := decodeMember([]byte(c.Name), v)
		if err != nil {
			return err
		}
		if cur.RaftAddr == c.RaftAddr && cur.ClientAddr == c.ClientAddr {
			return nil
		}
	}
	v, err := msgpack.Marshal(&memberRecord{Raft: c.RaftAddr, Client: c.ClientAddr, Since: c.UnixNano})
	if err != nil {
		return fmt.Errorf("encode member %s: %w", c.Name, err)
	}
	return b.Put([]byte(c.Name), v)
}

// decodeMember reads the record stored under key k of meta/members.
func decodeMember(k, v []byte) (MemberAddressRecord, error) {
	if len(k) == 0 || v == nil {
		return MemberAddressRecord{}, fmt.Errorf("%w: unexpected entry %x in %s/%s", ErrFormat, k, bucketMeta, bucketMembers)
	}
	var m memberRecord
	if err := msgpack.Unmarshal(v, &m); err != nil {
		return MemberAddressRecord{}, fmt.Errorf("%w: member %q: %v", ErrFormat, k, err)
	}
	return MemberAddressRecord{Name: string(k), RaftAddr: m.Raft, ClientAddr: m.Client, SinceUnixNano: m.Since}, nil
}

// readMembers calls fn for every member record of meta, in name order.
func readMembers(meta *bolt.Bucket, fn func(MemberAddressRecord)) error {
	b := meta.Bucket(bucketMembers)
	if b == nil {
		return nil // no member ever moved
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rec, err := decodeMember(k, v)
		if err != nil {
			return err
		}
		fn(rec)
	}
	return nil
}

// MemberAddresses returns every member record, in name order: the members
// whose addresses the group's log changed. A member without a record
// listens where the deployment file says.
func (r *Repo) MemberAddresses() ([]MemberAddressRecord, error) {
	var out []MemberAddressRecord
	err := r.view(func(tx *bolt.Tx) error {
		return readMembers(tx.Bucket(bucketMeta), func(rec MemberAddressRecord) { out = append(out, rec) })
	})
	if err != nil {
		return nil, fmt.Errorf("read member addresses of %s: %w", r.path, err)
	}
	return out, nil
}

// digestMembers adds the member records to a digest, only when there are
// any, so that a repository without them digests as it did before they
// existed.
func digestMembers(d *digester, meta *bolt.Bucket) error {
	return readMembers(meta, func(m MemberAddressRecord) {
		d.str("member")
		d.str(m.Name)
		d.str(m.RaftAddr)
		d.str(m.ClientAddr)
		d.u64(uint64(m.SinceUnixNano))
	})
}
