package repository

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// The MemberAddress encoding is pinned like every other command's
// (command_test.go): its file must keep decoding to the same command and
// the encoder must keep writing the same bytes. Create a missing file with
// -update-golden.
func TestGoldenMemberAddress(t *testing.T) {
	cmd := MemberAddress{Name: "G1S1", RaftAddr: "127.0.0.4:14011", ClientAddr: "127.0.0.4:15011", UnixNano: 1735690500123456789}
	const file = "memberaddress-v1.hex"
	path := filepath.Join("testdata", "commands", file)
	if _, err := os.Stat(path); os.IsNotExist(err) && *updateGolden {
		if err := os.WriteFile(path, []byte(hex.EncodeToString(EncodeMemberAddress(cmd))+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := readGolden(t, file)
	got, err := DecodeCommand(data)
	if err != nil {
		t.Fatalf("pinned entry no longer decodes: %v", err)
	}
	if !reflect.DeepEqual(got, cmd) {
		t.Errorf("pinned entry decodes to %+v, want %+v", got, cmd)
	}
	if enc := EncodeMemberAddress(cmd); !bytes.Equal(enc, data) {
		t.Errorf("encoder output changed:\n got %x\nwant %x", enc, data)
	}
	if s := CmdMemberAddress.String(); s != "MemberAddress" {
		t.Errorf("CmdMemberAddress.String() = %q", s)
	}
	// Strict decoding, as for every command: a field more or less is an
	// error, never a silent difference between stores.
	if _, err := DecodeCommand(append(bytes.Clone(data), 0x01)); !errors.Is(err, ErrBadCommand) {
		t.Errorf("trailing byte: %v, want ErrBadCommand", err)
	}
}

func TestApplyMemberAddress(t *testing.T) {
	own := InitGroup{GroupID: "g-1", Index: 1, UnixNano: 1}
	moved := func(raft, client string, at int64) rawData {
		return rawData(EncodeMemberAddress(MemberAddress{Name: "G1S1", RaftAddr: raft, ClientAddr: client, UnixNano: at}))
	}
	tests := []struct {
		name    string
		cmds    []any
		refused []int // indexes of cmds whose result is an ErrBadCommand
		want    []MemberAddressRecord
	}{
		{
			name: "none recorded",
			cmds: []any{own},
		},
		{
			name: "record a move",
			cmds: []any{own, moved("10.0.0.4:14011", "10.0.0.4:15011", 10)},
			want: []MemberAddressRecord{{Name: "G1S1", RaftAddr: "10.0.0.4:14011", ClientAddr: "10.0.0.4:15011", SinceUnixNano: 10}},
		},
		{
			name: "the same addresses again change nothing, not even the time",
			cmds: []any{own, moved("10.0.0.4:14011", "10.0.0.4:15011", 10), moved("10.0.0.4:14011", "10.0.0.4:15011", 20)},
			want: []MemberAddressRecord{{Name: "G1S1", RaftAddr: "10.0.0.4:14011", ClientAddr: "10.0.0.4:15011", SinceUnixNano: 10}},
		},
		{
			name: "a later move replaces the record",
			cmds: []any{own, moved("10.0.0.4:14011", "10.0.0.4:15011", 10), moved("10.0.0.5:14011", "10.0.0.5:15011", 30)},
			want: []MemberAddressRecord{{Name: "G1S1", RaftAddr: "10.0.0.5:14011", ClientAddr: "10.0.0.5:15011", SinceUnixNano: 30}},
		},
		{
			name:    "a record without an address is refused and changes nothing",
			cmds:    []any{own, moved("10.0.0.4:14011", "10.0.0.4:15011", 10), moved("", "10.0.0.6:15011", 40)},
			refused: []int{2},
			want:    []MemberAddressRecord{{Name: "G1S1", RaftAddr: "10.0.0.4:14011", ClientAddr: "10.0.0.4:15011", SinceUnixNano: 10}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, tc.cmds...))
			for i, rs := range res {
				refused := false
				for _, j := range tc.refused {
					refused = refused || j == i
				}
				if refused != errors.Is(rs.Err, ErrBadCommand) {
					t.Errorf("entry %d: result error %v, refused %v", i, rs.Err, refused)
				}
			}
			if got := r.AppliedIndex(); got != uint64(len(tc.cmds)) {
				t.Errorf("applied index %d, want %d", got, len(tc.cmds))
			}
			got, err := r.MemberAddresses()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MemberAddresses() = %+v, want %+v", got, tc.want)
			}
			r = reopen(t, r)
			if again, _ := r.MemberAddresses(); !reflect.DeepEqual(again, tc.want) {
				t.Errorf("after reopen: %+v, want %+v", again, tc.want)
			}
		})
	}
}

// Two stores that applied the same log digest the same; one that missed a
// member record digests differently, and a snapshot carries the records.
func TestMemberAddressInDigestAndSnapshot(t *testing.T) {
	rec := rawData(EncodeMemberAddress(MemberAddress{Name: "G2S1", RaftAddr: "10.0.0.4:14021", ClientAddr: "10.0.0.4:15021", UnixNano: 5}))
	base := []any{InitGroup{GroupID: "g", Index: 2, UnixNano: 1}}
	a := openApplied(t, append(base, rec)...)
	b := openApplied(t, append(base, rec)...)
	without := openApplied(t, append(base, nil)...)
	if mustDigest(t, a) != mustDigest(t, b) {
		t.Fatal("the same log gives two digests")
	}
	if mustDigest(t, a) == mustDigest(t, without) {
		t.Fatal("a member record does not change the digest")
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	c := openTest(t)
	if err := c.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if mustDigest(t, c) != mustDigest(t, a) {
		t.Fatal("the restored repository digests differently")
	}
	if got, _ := c.MemberAddresses(); len(got) != 1 || got[0].ClientAddr != "10.0.0.4:15021" {
		t.Fatalf("restored records: %+v", got)
	}
}

// The member records travel in the snapshot stream as records of their
// own ('m'), under the stream's closing checksum and checked as apply would
// have written them: a damaged one, or one without an address, is refused
// and the receiving repository is left as it was.
func TestSnapshotStreamMemberRecords(t *testing.T) {
	rec := MemberAddress{Name: "G2S1", RaftAddr: "10.0.0.4:14021", ClientAddr: "10.0.0.4:15021", UnixNano: 5}
	src := openApplied(t, InitGroup{GroupID: "g", Index: 2, UnixNano: 1}, rec)
	stream := snapshotBytes(t, src)
	at := bytes.Index(stream, []byte(rec.RaftAddr))
	if at < 0 {
		t.Fatal("the stream does not carry the member's address")
	}
	flipped := bytes.Clone(stream)
	flipped[at] ^= 0x01

	// A record apply would have refused, written into the file directly.
	bad := openApplied(t, InitGroup{GroupID: "g", Index: 2, UnixNano: 1}, rec)
	err := bad.db.Update(func(tx *bolt.Tx) error {
		v, err := msgpack.Marshal(&memberRecord{Raft: "", Client: rec.ClientAddr, Since: 5})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Bucket(bucketMembers).Put([]byte(rec.Name), v)
	})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		stream []byte
	}{
		{"a bit flipped in a member record", flipped},
		{"a member record without a raft address", snapshotBytes(t, bad)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openApplied(t, InitGroup{GroupID: "g", Index: 2, UnixNano: 1})
			before := mustDigest(t, r)
			err := r.Restore(bytes.NewReader(tt.stream))
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("Restore: %v, want ErrFormat", err)
			}
			t.Log(err)
			if mustDigest(t, r) != before {
				t.Error("a refused Restore changed the repository")
			}
		})
	}
}
