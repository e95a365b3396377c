package clustertest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"umstore/repository"
)

// openRepo opens a fresh repository and applies cmds as entries 1, 2, ...
// (a nil command is an entry without one, as raft's configuration entries).
func openRepo(t *testing.T, cmds ...[]byte) *repository.Repo {
	t.Helper()
	r, err := repository.Open(filepath.Join(t.TempDir(), "repo.db"), repository.Options{NoSync: true, InitialMmapSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var entries []repository.Entry
	for i, c := range cmds {
		entries = append(entries, repository.Entry{Index: uint64(i + 1), Term: 1, Data: c})
	}
	if _, err := r.Apply(entries); err != nil {
		t.Fatal(err)
	}
	return r
}

func publish(source string, first uint64, payloads ...string) []byte {
	p := repository.Publish{Source: source, FirstSeq: first}
	for _, s := range payloads {
		p.Payloads = append(p.Payloads, []byte(s))
	}
	return repository.EncodePublish(p)
}

// The comparison finds each kind of difference a diverged store can show,
// and none between repositories that applied the same log.
func TestCompareRepos(t *testing.T) {
	initA := repository.EncodeInitGroup(repository.InitGroup{GroupID: "group-a", Index: 1, UnixNano: 1})
	initB := repository.EncodeInitGroup(repository.InitGroup{GroupID: "group-b", Index: 1, UnixNano: 1})
	base := [][]byte{initA, publish("s", 1, "a", "b", "c")}
	with := func(more ...[]byte) [][]byte { return append(append([][]byte(nil), base...), more...) }
	tests := []struct {
		name string
		a, b [][]byte
		want []string // substrings of the report; none means no difference
	}{
		{"same log", base, base, nil},
		{"same state, applied in another order", with(publish("t", 1, "x")), [][]byte{initA, publish("t", 1, "x"), publish("s", 1, "a", "b", "c")}, nil},
		{"behind", with(publish("s", 4, "d")), base, []string{`source "s": high sequence: A has 4, B has 3`, "applied index: A has 3, B has 2"}},
		{"payload differs", base, [][]byte{initA, publish("s", 1, "a", "B", "c")}, []string{`source "s": message 2: payloads differ`}},
		{"source held by one", base, with(publish("t", 1, "x")), []string{`source "t": held by B only`}},
		{"gap", with(publish("s", 5, "e")), with(publish("s", 4, "d"), publish("s", 5, "e")), []string{`source "s": gaps`}},
		{"identity", base, [][]byte{initB, publish("s", 1, "a", "b", "c")}, []string{`group identity: A has "group-a", B has "group-b"`}},
		{"receivers", with(repository.EncodeConsumed(repository.Consumed{Source: "s", Receiver: "r", Seq: 2, UnixNano: 5})), with(repository.EncodeConsumed(repository.Consumed{Source: "s", Receiver: "r", Seq: 3, UnixNano: 5})), []string{`source "s": receiver positions`}},
		{"other groups", with(repository.EncodePeerGroup(repository.PeerGroup{Index: 2, GroupID: "g2", UnixNano: 1})), with(nil), []string{"records of the other groups"}},
		{"applied index only", with(nil), base, []string{"applied index: A has 3, B has 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := openRepo(t, tt.a...), openRepo(t, tt.b...)
			got := strings.Join(compareRepos("A", a, "B", b), "\n")
			if len(tt.want) == 0 && got != "" {
				t.Fatalf("reported differences between equal repositories:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("report lacks %q:\n%s", w, got)
				}
			}
			// The poll's quick check agrees with the detailed one.
			sa, err := readState("A", a)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := readState("B", b)
			if err != nil {
				t.Fatal(err)
			}
			err = describe(1, []repoState{sa, sb})
			if same := allEqual([]repoState{sa, sb}); same != (len(tt.want) == 0) || same != (err == nil) {
				t.Fatalf("quick check says same=%v, want %v; describe: %v", same, len(tt.want) == 0, err)
			}
			if err != nil && (!errors.Is(err, ErrNotSame) || !strings.Contains(err.Error(), "B differs from A")) {
				t.Fatalf("describe: %v, want ErrNotSame naming B", err)
			}
		})
	}
}

// Messages are compared page by page: a difference past the first page is
// found too.
func TestCompareMessagesPastAPage(t *testing.T) {
	payloads := func(changed int) []string {
		var out []string
		for i := 1; i <= 1200; i++ {
			p := "m"
			if i == changed {
				p = "changed"
			}
			out = append(out, p)
		}
		return out
	}
	a := openRepo(t, publish("s", 1, payloads(0)...))
	b := openRepo(t, publish("s", 1, payloads(1100)...))
	if got := compareMessages("s", "A", a, "B", b); !strings.Contains(got, "message 1100: payloads differ") {
		t.Fatalf("got %q, want message 1100 reported", got)
	}
	if got := compareMessages("s", "A", a, "A2", a); got != "" {
		t.Fatalf("a repository differs from itself: %q", got)
	}
}
