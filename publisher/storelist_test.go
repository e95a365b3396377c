package publisher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
)

// Two publishers given disjoint store lists (one the stores of group 1,
// the other those of group 2) would publish one source into different
// groups, each group holding other payloads for the same sequence numbers;
// a list naming one group twice would count its confirmations twice. Each
// is refused at registration, saying what is wrong. (A list group mixing
// two groups' stores is refused by groupclient: TestWrongGroupIsRefused.)
func TestDisjointStoreListsAreRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		name   string
		groups [][]string
		want   string
	}{
		{"only group 1's stores", [][]string{c.Addrs()[0]}, "deployment has 2 groups"},
		{"only group 2's stores", [][]string{c.Addrs()[1]}, "deployment has 2 groups"},
		{"group 1's stores listed as two groups", [][]string{c.Addrs()[0], c.Addrs()[0]}, "are both stores of the deployment's group 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := publisher.DefaultConfig()
			cfg.Source, cfg.Groups = "orders", tt.groups
			p, err := publisher.New(ctx, cfg)
			if err == nil {
				p.Close()
				t.Fatal("a publisher given part of the deployment registered")
			}
			if !errors.Is(err, publisher.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrConfig saying %q", err, tt.want)
			}
		})
	}
}
