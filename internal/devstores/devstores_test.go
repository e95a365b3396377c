package devstores

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"umstore/placement"
)

// A port of the layout taken after freeBase looked fails the attempt at
// once, so Start tries another base. Before, the host ran without the store
// that could not bind, and when that store was its group's bootstrapper the
// attempt waited for a leader until its context ended.
func TestTakenPortFailsTheAttemptAtOnce(t *testing.T) {
	base := freeBase()
	raft := placement.Dev("127.0.0.1", base).Stores()[0].RaftAddr()
	ln, err := net.Listen("tcp", raft)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	s, err := start(ctx, base)
	if err == nil {
		s.Stop()
		t.Fatalf("start with %s taken succeeded", raft)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error does not say the port is taken: %v", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the attempt took %v: it waited for leaders instead of failing", took)
	}
}

func TestStartElectsEveryGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := s.Groups()
	if len(groups) != 2 || len(groups[0]) != 3 || len(groups[1]) != 3 {
		t.Errorf("groups: %v, want two of three stores", groups)
	}
	for _, h := range s.hosts {
		if failed := h.Failed(); len(failed) > 0 {
			t.Errorf("host %s runs without %v", h.Name(), failed)
		}
	}
	dir := s.dir
	s.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind (stat: %v)", dir, err)
	}
}
