package storegroup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
	"umstore/receiver"
)

// A publisher whose state file bounds what it sent at 4,106 restarts
// while group 2 is down, after 10 messages: it resumes at 4,107 and never
// sends 11-4106. Every group records that range as never published, not
// as a gap (status: no gap, one unpublished range), and a full read, from
// every group or from group 2 alone, ends without an error. Before, both
// groups reported gap [11,4106] and every full read ended in a
// *MissingError for good.
func TestStateFileJumpIsNeverPublishedNotAGap(t *testing.T) {
	t.Skip("the publisher no longer declares the skipped range (publisher/unused.go): a group that did not answer may hold acknowledged messages in it, and receivers skipped them (chaos seed 1004); re-enable with a record that becomes final only once every group answered")
	t.Parallel()
	c := clustertest.Start(t, 2, fastRepair)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "jump.state")
	start := func() *publisher.Publisher {
		cfg := publisher.DefaultConfig()
		cfg.Source, cfg.Groups, cfg.StateFile, cfg.RegisterTimeout = "jump", c.Addrs(), state, 300*time.Millisecond
		p, err := publisher.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	send := func(p *publisher.Publisher, n int) {
		for i := 0; i < n; i++ {
			if _, err := p.Send(ctx, []byte(fmt.Sprintf("m%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p1 := start()
	send(p1, 10)
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	// The state file moves forward: not settled, sent up to 4106.
	var f map[string]any
	b, err := os.ReadFile(state)
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		t.Fatal(err)
	}
	f["settled"], f["sent_up_to"] = false, 4106
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members(2) {
		c.Kill(m.Name)
	}
	p2 := start()
	if got := p2.FirstSeq(); got != 4107 {
		t.Fatalf("the restarted publisher resumed at %d, want 4107 (past the state file's bound)", got)
	}
	send(p2, 10)
	for _, m := range c.Members(2) {
		c.StartStore(m.Name)
	}
	c.Eventually(30*time.Second, "both groups hold 1-10 and 4107-4116", func() bool {
		for g := 1; g <= 2; g++ {
			l := c.Leader(g)
			if l == nil {
				return false
			}
			info, ok, err := l.Repository().Source("jump")
			if err != nil || !ok || info.HighSeq != 4116 || info.Count != 20 {
				return false
			}
		}
		return true
	})
	for g := 1; g <= 2; g++ {
		deadline := time.Now().Add(5 * time.Second) // the record is proposed beside the first Publish
		for {
			var ss *struct{ gaps, unpublished int }
			for _, s := range c.WaitLeader(g, 10*time.Second).Status().Sources {
				if s.Name == "jump" {
					ss = &struct{ gaps, unpublished int }{s.Gaps, s.Unpublished}
				}
			}
			if ss != nil && ss.gaps == 0 && ss.unpublished == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("group %d status: %+v; want no gap and one unpublished range", g, ss)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		name  string
		group int
		from  uint64
	}{
		{"every group from 1", 0, 1},
		{"every group from the oldest", 0, receiver.Oldest},
		{"group 2 alone from 1", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := receiver.DefaultConfig()
			cfg.Source, cfg.Groups, cfg.Group = "jump", c.Addrs(), tc.group
			r, err := receiver.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			n := 0
			if err := r.Read(ctx, tc.from, 4116, func(receiver.Message) error { n++; return nil }); err != nil || n != 20 {
				t.Fatalf("read %d messages, %v; want 20 and no error", n, err)
			}
		})
	}
}
