package storegroup_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"umstore/internal/testmain"
	"umstore/receiver"
)

// A receiver given host A's old addresses follows its source through host
// B's stores after host A was replaced at new addresses; once host B is
// gone too, it goes on receiving from the new host A, whose addresses it
// learnt from the group while it followed.
func TestReceiverFollowsAReplacedHost(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	c, _ := replaceHostA(t)
	var old [][]string // the deployment file the receiver was given: host A's old addresses
	for g := 1; g <= 2; g++ {
		var addrs []string
		for _, m := range c.Members(g) {
			addrs = append(addrs, m.ClientAddr)
		}
		old = append(old, addrs)
	}
	cfg := receiver.DefaultConfig()
	cfg.Source = "moved"
	cfg.Groups = old
	cfg.Group = 1
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	var high uint64
	followed := make(chan error, 1)
	go func() {
		followed <- r.Follow(ctx, 1, func(m receiver.Message) error {
			mu.Lock()
			high = max(high, m.Seq)
			mu.Unlock()
			return nil
		}, nil)
	}()
	seen := func(seq uint64) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return high >= seq }
	}
	c.Eventually(30*time.Second, "the receiver reads the first 1000 through host B", seen(1000))
	time.Sleep(5 * time.Second)                             // two rounds of asking the group where its members listen
	for _, name := range []string{"G1S3", "G2S2", "G2S3"} { // host B
		c.Kill(name)
	}
	l := c.WaitLeader(1, 30*time.Second)
	if l.Name() != "G1S1" && l.Name() != "G1S2" {
		t.Fatalf("group 1 is led by %s", l.Name())
	}
	if err := c.PublishDirect(ctx, 1, "moved", 1001, [][]byte{[]byte("after B")}); err != nil {
		t.Fatalf("publishing through the new host A alone: %v", err)
	}
	c.Eventually(30*time.Second, "the receiver reads 1001 from the new host A", seen(1001))
	cancel()
	<-followed
}
