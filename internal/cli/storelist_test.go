package cli

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"umstore/placement"
)

// UM store lists: GroupIDX from 0 labels groups in increasing order, RegIDs
// are numbers, the same for all or one per store (none 0 then), a DomainID is accepted and recorded, 0.0.0.0:0 clears, and
// --store-group is checked against the stores given.
func TestStoresUMLists(t *testing.T) {
	tests := []struct {
		name    string
		f       StoreFlags
		want    StoreList
		wantErr string
	}{
		{name: "GroupIDX 0 and 1",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1:0:0", "127.0.0.1:2:0:1", "127.0.0.1:3:0:0"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1", "127.0.0.1:3"}, {"127.0.0.1:2"}}, Indexes: []int{0, 1}}},
		{name: "omitted GroupIDX is 0",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1", "127.0.0.1:2:0:5"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1"}, {"127.0.0.1:2"}}, Indexes: []int{0, 5}}},
		{name: "labels in any order sort",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1:0:7", "127.0.0.1:2:0:2"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:2"}, {"127.0.0.1:1"}}, Indexes: []int{2, 7}}},
		{name: "static RegID",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1:1000:0", "127.0.0.1:2:1000:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1"}, {"127.0.0.1:2"}}, Indexes: []int{0, 1}, RegID: 1000}},
		{name: "IP:port:RegID",
			f:    StoreFlags{Stores: []string{"127.0.0.1:14567:1000"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:14567"}}, Indexes: []int{0}, RegID: 1000}},
		{name: "DomainID 0",
			f:    StoreFlags{Stores: []string{"0:127.0.0.1:1:0:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1"}}, Indexes: []int{1}}},
		{name: "DomainID not 0: recorded",
			f:    StoreFlags{Stores: []string{"5:127.0.0.1:1:0:1", "127.0.0.1:2:0:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1", "127.0.0.1:2"}}, Indexes: []int{1}, Domains: map[string]uint32{"127.0.0.1:1": 5}}},
		{name: "a RegID per store",
			f:    StoreFlags{Stores: []string{"127.0.0.1:3:12:1", "127.0.0.1:1:10:0", "127.0.0.1:2:11:0"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1", "127.0.0.1:2"}, {"127.0.0.1:3"}}, Indexes: []int{0, 1}, RegIDs: [][]uint32{{10, 11}, {12}}}},
		{name: "clear",
			f:    StoreFlags{Stores: []string{"127.0.0.9:9", "0.0.0.0:0", "127.0.0.1:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1"}}, Indexes: []int{0}}},
		{name: "store groups match",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1:0:0", "127.0.0.1:2:0:0", "127.0.0.1:3:0:1"}, Groups: []string{"0:2", "1:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1", "127.0.0.1:2"}, {"127.0.0.1:3"}}, Indexes: []int{0, 1}}},
		{name: "store groups cleared and given again",
			f:    StoreFlags{Stores: []string{"127.0.0.1:1:0:3"}, Groups: []string{"3:2", "0:0", "3:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.1:1"}}, Indexes: []int{3}}},

		{name: "RegID not a number", f: StoreFlags{Stores: []string{"127.0.0.1:1:abc:0"}}, wantErr: `RegID "abc" is not a number`},
		{name: "RegID too large", f: StoreFlags{Stores: []string{"127.0.0.1:1:4294967296"}}, wantErr: "RegID"},
		{name: "RegIDs differ, one 0", f: StoreFlags{Stores: []string{"127.0.0.1:1:1000:0", "127.0.0.1:2:0:1"}}, wantErr: `"127.0.0.1:2:0:1" has RegID 0 but "127.0.0.1:1:1000:0" has 1000`},
		{name: "GroupIDX negative", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:-1"}}, wantErr: `group index "-1" is not 0..255`},
		{name: "GroupIDX too large", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:256"}}, wantErr: "is not 0..255"},
		{name: "too many fields", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:0:9"}}, wantErr: "want IP:port[:RegID[:GroupIDX]]"},
		{name: "listed twice", f: StoreFlags{Stores: []string{"127.0.0.1:1", "127.0.0.1:1:0:1"}}, wantErr: "already listed"},
		{name: "cleared to nothing", f: StoreFlags{Stores: []string{"127.0.0.1:1", "0.0.0.0:0"}}, wantErr: "the list is empty"},
		{name: "group too small", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:0"}, Groups: []string{"0:3"}}, wantErr: "group 0 does not have enough stores specified"},
		{name: "group too large", f: StoreFlags{Stores: []string{"127.0.0.1:1", "127.0.0.1:2"}, Groups: []string{"0:1"}}, wantErr: "more than --store-group 0:1"},
		{name: "group not listed", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:0", "127.0.0.1:2:0:1"}, Groups: []string{"0:1"}}, wantErr: "add --store-group 1:1"},
		{name: "group without stores", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:0"}, Groups: []string{"0:1", "4:1"}}, wantErr: "no store is given GroupIDX 4"},
		{name: "groups not increasing", f: StoreFlags{Stores: []string{"127.0.0.1:1:0:0"}, Groups: []string{"1:1", "0:1"}}, wantErr: "increasing GroupIDX order"},
		{name: "group spec malformed", f: StoreFlags{Stores: []string{"127.0.0.1:1"}, Groups: []string{"0"}}, wantErr: "want GroupIDX:GroupSZ"},
		{name: "store name without deployment", f: StoreFlags{Names: []string{"G1S1"}}, wantErr: "--store-name needs --deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Stores("", tt.f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Stores(%+v) error = %v, want %q", tt.f, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Stores(%+v) = %+v, %v; want %+v", tt.f, got, err, tt.want)
			}
		})
	}
}

// --store-name resolves names through the deployment; GroupIDX must map
// deployment groups one to one.
func TestStoresByName(t *testing.T) {
	d, _, err := placement.Plan(placement.Request{Hosts: []placement.Host{{Name: "A", Address: "127.0.0.2"}, {Name: "B", Address: "127.0.0.3"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.yaml")
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		f       StoreFlags
		want    StoreList
		wantErr string
	}{
		{name: "two groups by name",
			f:    StoreFlags{Names: []string{"G1S1:7:0", "G1S3:7:0", "G2S2:7:1"}, Groups: []string{"0:2", "1:1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.2:15011", "127.0.0.3:15013"}, {"127.0.0.3:15022"}}, Indexes: []int{0, 1}, RegID: 7}},
		{name: "name only",
			f:    StoreFlags{Names: []string{"G2S1"}},
			want: StoreList{Groups: [][]string{{"127.0.0.2:15021"}}, Indexes: []int{0}}},
		{name: "unknown name", f: StoreFlags{Names: []string{"G9S9"}}, wantErr: `the deployment has no store "G9S9" (it has G1S1,`},
		{name: "bad name", f: StoreFlags{Names: []string{"G1 S1"}}, wantErr: "not allowed in a store name"},
		{name: "one GroupIDX over two groups", f: StoreFlags{Names: []string{"G1S1", "G2S1"}}, wantErr: "mixes stores of deployment groups 1 and 2"},
		{name: "one group under two GroupIDXs", f: StoreFlags{Names: []string{"G1S1:0:0", "G1S2:0:1"}}, wantErr: "one group cannot be two"},
		{name: "store group without names", f: StoreFlags{Groups: []string{"0:3"}}, wantErr: "--store-group checks a store list"},
		{name: "deployment and --store", f: StoreFlags{Stores: []string{"127.0.0.1:1"}}, wantErr: "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dep, err := Stores(path, tt.f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Stores error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) || dep == nil {
				t.Fatalf("Stores = %+v, %v (deployment %v); want %+v", got, err, dep != nil, tt.want)
			}
		})
	}
	got, _, err := Stores(path, StoreFlags{})
	if err != nil || len(got.Groups) != 2 || !reflect.DeepEqual(got.Indexes, []int{1, 2}) {
		t.Fatalf("deployment alone: %+v, %v", got, err)
	}
}
