package raftport

import "testing"

func TestVoteGateAllows(t *testing.T) {
	target := Position{Term: 3, Index: 100}
	tests := []struct {
		name string
		cand Position
		want bool
	}{
		{"same position", Position{3, 100}, true},
		{"longer log, same term", Position{3, 150}, true},
		{"later term, shorter log", Position{4, 10}, true},
		{"shorter log, same term", Position{3, 99}, false},
		{"longer log, older term", Position{2, 500}, false},
		{"empty log", Position{}, false},
	}
	var g VoteGate
	for _, tt := range tests {
		if !g.Allows(tt.cand) {
			t.Fatalf("an open gate refused %s", tt.name)
		}
	}
	g.Close(target)
	for _, tt := range tests {
		if got := g.Allows(tt.cand); got != tt.want {
			t.Errorf("%s: allows(%v) = %v, want %v", tt.name, tt.cand, got, tt.want)
		}
	}
	g.Open()
	if !g.Allows(Position{}) {
		t.Fatal("an opened gate still refuses")
	}
}
