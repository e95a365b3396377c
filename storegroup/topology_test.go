package storegroup

import (
	"reflect"
	"testing"
)

func TestTopologyPlace(t *testing.T) {
	t.Parallel()
	g1 := []Member{{Name: "G1S1", RaftAddr: "a:1", ClientAddr: "a:2"}, {Name: "G1S2", RaftAddr: "a:3", ClientAddr: "a:4"}, {Name: "G1S3", RaftAddr: "b:1", ClientAddr: "b:2"}}
	g2 := []Member{{Name: "G2S1", RaftAddr: "a:5", ClientAddr: "a:6"}, {Name: "G2S2", RaftAddr: "b:3", ClientAddr: "b:4"}, {Name: "G2S3", RaftAddr: "b:5", ClientAddr: "b:6"}}
	topo := Topology{{Index: 1, Members: g1}, {Index: 2, Members: g2}}

	cfg := DefaultConfig()
	if !topo.Place(&cfg, "G2S2") {
		t.Fatal("G2S2 not placed")
	}
	if cfg.Name != "G2S2" || cfg.Group != 2 || !reflect.DeepEqual(cfg.Members, g2) {
		t.Fatalf("placed as %s of group %d with members %v", cfg.Name, cfg.Group, cfg.Members)
	}
	if want := []PeerGroup{{Index: 1, Members: g1}}; !reflect.DeepEqual(cfg.OtherGroups, want) {
		t.Fatalf("other groups %v, want %v", cfg.OtherGroups, want)
	}
	// Placing again replaces, never appends to, the other groups.
	topo.Place(&cfg, "G1S1")
	if cfg.Group != 1 || len(cfg.OtherGroups) != 1 || cfg.OtherGroups[0].Index != 2 {
		t.Fatalf("re-placed as group %d with other groups %v", cfg.Group, cfg.OtherGroups)
	}
	before := cfg
	if topo.Place(&cfg, "G3S1") {
		t.Fatal("placed a store no group has")
	}
	if !reflect.DeepEqual(cfg, before) {
		t.Fatal("a failed Place changed the configuration")
	}
}
