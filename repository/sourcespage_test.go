package repository

import (
	"fmt"
	"reflect"
	"testing"
)

// TestSourcesPage checks the pages of the source list: in name order,
// from after the given name, bounded by count and by bytes, next naming
// the last listed only when more follow.
func TestSourcesPage(t *testing.T) {
	var cmds []any
	for _, name := range []string{"e", "a", "d", "c", "b"} {
		cmds = append(cmds, Register{Source: name, Session: "s", UnixNano: 1})
	}
	r := openApplied(t, cmds...)
	for _, tc := range []struct {
		after           string
		limit, maxBytes int
		want            []string
		next            string
	}{
		{"", 0, 0, []string{"a", "b", "c", "d", "e"}, ""},
		{"", 2, 0, []string{"a", "b"}, "b"},
		{"b", 2, 0, []string{"c", "d"}, "d"},
		{"d", 2, 0, []string{"e"}, ""},
		{"bb", 0, 0, []string{"c", "d", "e"}, ""}, // a name not in the list
		{"e", 2, 0, nil, ""},
		{"", 5, 0, []string{"a", "b", "c", "d", "e"}, ""},
		{"", 0, 1, []string{"a"}, "a"},       // one source passes any byte bound
		{"", 0, 66, []string{"a", "b"}, "b"}, // 33 bytes each, names and fixed fields
		{"", 0, 67, []string{"a", "b", "c"}, "c"},
	} {
		got, next, err := r.SourcesPage(tc.after, tc.limit, tc.maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, in := range got {
			names = append(names, in.Name)
		}
		if !reflect.DeepEqual(names, tc.want) || next != tc.next {
			t.Errorf("SourcesPage(%q, %d, %d) = %v, next %q; want %v, next %q", tc.after, tc.limit, tc.maxBytes, names, next, tc.want, tc.next)
		}
	}
	// Walking the pages lists every source once.
	all, after := []string{}, ""
	for i := 0; ; i++ {
		page, next, err := r.SourcesPage(after, 2, 0)
		if err != nil || i > 5 {
			t.Fatalf("page %d: %v", i, err)
		}
		for _, in := range page {
			all = append(all, in.Name)
		}
		if next == "" {
			break
		}
		after = next
	}
	if fmt.Sprint(all) != "[a b c d e]" {
		t.Fatalf("walked %v", all)
	}
}
