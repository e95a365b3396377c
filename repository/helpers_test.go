package repository

import (
	"fmt"
	"path/filepath"
	"testing"
)

// openTest opens a fresh repository in a test directory, closed at cleanup.
func openTest(t testing.TB) *Repo {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "repo.db"))
}

func openAt(t testing.TB, path string) *Repo {
	t.Helper()
	r, err := Open(path, Options{NoSync: true, InitialMmapSize: 16 << 20})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// rawData is a command given as bytes, for malformed or unknown entries.
type rawData []byte

// encode turns a command value (or rawData, or nil for a non-command entry)
// into entry data.
func encode(cmd any) []byte {
	switch c := cmd.(type) {
	case nil:
		return nil
	case rawData:
		return c
	case InitGroup:
		return EncodeInitGroup(c)
	case Register:
		return EncodeRegister(c)
	case Publish:
		return EncodePublish(c)
	case PeerGroup:
		return EncodePeerGroup(c)
	case Consumed:
		return EncodeConsumed(c)
	case Trim:
		return EncodeTrim(c)
	case ExpireSession:
		return EncodeExpireSession(c)
	case PublishAs:
		return EncodePublishAs(c)
	}
	panic(fmt.Sprintf("encode: unsupported %T", cmd))
}

// logOf numbers commands as consecutive raft entries starting at index
// first, in term 1.
func logOf(first uint64, cmds ...any) []Entry {
	entries := make([]Entry, len(cmds))
	for i, c := range cmds {
		entries[i] = Entry{Index: first + uint64(i), Term: 1, Data: encode(c)}
	}
	return entries
}

func mustApply(t testing.TB, r *Repo, entries []Entry) []Result {
	t.Helper()
	res, err := r.Apply(entries)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res) != len(entries) {
		t.Fatalf("Apply returned %d results for %d entries", len(res), len(entries))
	}
	return res
}

func mustDigest(t testing.TB, r *Repo) string {
	t.Helper()
	d, err := r.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// payloads returns n distinct payloads for messages first..first+n-1.
func payloads(tag string, first uint64, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("%s-%d", tag, first+uint64(i)))
	}
	return out
}
