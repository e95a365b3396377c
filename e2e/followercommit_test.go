package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"umstore/internal/testmain"
	"umstore/placement"
	"umstore/wire"
)

// A follower commits its repository rarely (--follower-commit-interval):
// what it applied since its last commit lives only in its raft log. Killed
// then (every store of umstored dev at once, with SIGKILL), each store must
// come back holding every acknowledged message, from its own files: the
// applied-but-uncommitted entries are replayed, none is taken as applied.
func TestFollowersUncommittedBatchesSurviveAKill(t *testing.T) {
	testmain.Slow(t)
	bin := binaries(t)
	data := t.TempDir()
	base := freeBasePort(t)
	admin := freeBase(t, []string{"127.0.0.1"}, []int{0})
	flags := []string{"--follower-commit-interval", "1s", "--admin-addr", fmt.Sprintf("127.0.0.1:%d", admin)}
	dev := startDevAt(t, bin, data, base, flags...)
	deploy := filepath.Join(data, "deployment.yaml")
	// The case is real only if some store holds applied batches its
	// repository has not committed (raft's applied index ahead of the
	// repository's durable one) when it is killed: publish until one does.
	count := 0
	var behind []string
	for round := 0; round < 5 && len(behind) == 0; round++ {
		out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "fc", "--count", "600", "--size", "200", "--json")
		if code != 0 {
			t.Fatalf("umpub exited %d: %s\n%s", code, errOut, out)
		}
		count += 600
		behind = uncommittedStores(t, admin)
	}
	if len(behind) == 0 {
		t.Fatal("no store held uncommitted batches before the kill; the test proves nothing")
	}
	t.Logf("stores with uncommitted batches at the kill: %v", behind)
	if err := dev.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = dev.Process.Wait()

	startDevAt(t, bin, data, base, flags...)
	d, err := placement.Load(deploy)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, ref := range d.Stores() {
		for {
			held, err := heldLocally(ref.ClientAddr(), "fc", count)
			if err == nil && held == count {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("store %s holds %d of the %d acknowledged messages from its own files (%v)", ref.Store.Name, held, count, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// uncommittedStores are the stores whose raft applied index is ahead of
// their repository's durable one, from umstored's /metrics.
func uncommittedStores(t *testing.T, admin int) []string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", admin))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	byStore := func(family string) map[string]float64 {
		values := map[string]float64{}
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "store" {
					values[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
		return values
	}
	raftApplied, repoApplied := byStore("umstore_raft_applied_index"), byStore("umstore_repository_applied_index")
	var behind []string
	for name, v := range raftApplied {
		if v > repoApplied[name] {
			behind = append(behind, name)
		}
	}
	return behind
}

// heldLocally is how many of source's messages 1..count the store at addr
// holds in its own files (a Local Fetch, answered by a follower too).
func heldLocally(addr, source string, count int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := (&wire.Dialer{Client: "e2e follower commit", Timeout: 2 * time.Second}).Dial(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	held := 0
	for from := uint64(1); from <= uint64(count); {
		if err := c.Send(&wire.Fetch{ReqID: from, Source: source, From: from, To: uint64(count), Local: true}); err != nil {
			return held, err
		}
		m, err := c.Read()
		if err != nil {
			return held, err
		}
		r, ok := m.(*wire.FetchReply)
		if !ok {
			return held, fmt.Errorf("Fetch answered with %T %+v", m, m)
		}
		held += len(r.Msgs)
		if r.Through < from {
			return held, fmt.Errorf("Fetch from %d came back through %d", from, r.Through)
		}
		from = r.Through + 1
	}
	return held, nil
}
