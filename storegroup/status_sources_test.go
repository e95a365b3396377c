package storegroup

import (
	"fmt"
	"testing"

	"umstore/repository"
)

// A store's status lists at most a bounded number of sources, those with
// something to show first, each part in name order; a store with fewer
// lists them all.
func TestSourcesToList(t *testing.T) {
	src := func(name string, count uint64) repository.SourceInfo {
		return repository.SourceInfo{Name: name, Count: count, HighSeq: count}
	}
	names := func(infos []repository.SourceInfo) string {
		out := ""
		for _, in := range infos {
			out += in.Name + " "
		}
		return out
	}
	trimmed := repository.SourceInfo{Name: "d-trimmed", TrimmedThrough: 9}
	all := []repository.SourceInfo{src("a-empty", 0), src("b-held", 3), src("c-empty", 0), trimmed, src("e-held", 1), src("f-empty", 0)}
	cases := []struct {
		n    int
		want string
	}{
		{10, "a-empty b-held c-empty d-trimmed e-held f-empty "},
		{6, "a-empty b-held c-empty d-trimmed e-held f-empty "},
		{4, "b-held d-trimmed e-held a-empty "},
		{2, "b-held d-trimmed "},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			if got := names(sourcesToList(all, tc.n)); got != tc.want {
				t.Errorf("sourcesToList(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
