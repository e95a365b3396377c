package storegroup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"umstore/internal/clustertest"
	"umstore/receiver"
	"umstore/storegroup"
	"umstore/wire"
)

// A Publish frame whose payload changed after its publisher computed the
// checksum is refused whole, with nothing proposed: the intact frame sent
// next stores its own payloads, not the damaged ones. A frame without
// checksums (an older publisher) is accepted as before.
func TestDamagedPublishFrameIsRefused(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	cl := dial(t, clientAddr(c, leader.Name()))
	if _, ok := cl.call(&wire.Register{ReqID: 1, Source: "crc", Session: "s1"}).(*wire.Registered); !ok {
		t.Fatal("registration refused")
	}
	a, b := []byte("alpha"), []byte("beta")
	crc := wire.Checksum
	tests := []struct {
		name     string
		p        *wire.Publish
		wantCode string // "" means an Ack
		wantHigh uint64 // the group's highest sequence number afterwards
	}{
		{"a payload changed after its checksum was computed", &wire.Publish{FirstSeq: 1, Payloads: [][]byte{a, []byte("betA")}, Checksums: []uint32{crc(a), crc(b)}}, wire.CodeChecksum, 0},
		{"a checksum damaged", &wire.Publish{FirstSeq: 1, Payloads: [][]byte{a, b}, Checksums: []uint32{crc(a), crc(b) ^ 0x100}}, wire.CodeChecksum, 0},
		{"fewer checksums than payloads", &wire.Publish{FirstSeq: 1, Payloads: [][]byte{a, b}, Checksums: []uint32{crc(a)}}, wire.CodeBadRequest, 0},
		{"intact", &wire.Publish{FirstSeq: 1, Payloads: [][]byte{a, b}, Checksums: []uint32{crc(a), crc(b)}}, "", 2},
		{"without checksums, as an older publisher sends", &wire.Publish{FirstSeq: 3, Payloads: [][]byte{[]byte("gamma")}}, "", 3},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.ReqID, tt.p.Source = uint64(10+i), "crc"
			switch m := cl.call(tt.p).(type) {
			case *wire.Ack:
				if tt.wantCode != "" {
					t.Fatalf("acknowledged %+v, want an Error %s", m, tt.wantCode)
				}
			case *wire.Error:
				if m.Code != tt.wantCode {
					t.Fatalf("answered %+v, want code %q", m, tt.wantCode)
				}
			default:
				t.Fatalf("answered %#v", m)
			}
			c.Eventually(10*time.Second, fmt.Sprintf("the group's highest is %d", tt.wantHigh), func() bool {
				info, ok, err := leader.Repository().Source("crc")
				return err == nil && ok && info.HighSeq == tt.wantHigh
			})
		})
	}
	msgs, err := leader.Repository().Read("crc", 1, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Payload))
	}
	if want := []string{"alpha", "beta", "gamma"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the group holds %q, want %q", got, want)
	}
	if n := metricValue(t, reg, "umstore_client_frames_refused_total", map[string]string{"reason": "checksum"}); n != 2 {
		t.Fatalf("umstore_client_frames_refused_total{reason=checksum} = %v, want 2", n)
	}
}

func damagePayload(seq uint64) []byte {
	return []byte(fmt.Sprintf("payload %d of the damage test", seq))
}

// readGroup reads 1..to through the receiver SDK from one group alone and
// returns what it delivered and the error.
func readGroupAlone(t *testing.T, c *clustertest.Cluster, group int, to uint64) (map[uint64][]byte, error) {
	t.Helper()
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups, cfg.Group = "d", c.Addrs(), group
	cfg.FetchCount = 50 // several fetches, damage inside and at their edges
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[uint64][]byte{}
	err = r.Read(ctx, 1, to, func(m receiver.Message) error {
		if _, dup := got[m.Seq]; dup {
			return fmt.Errorf("message %d delivered twice", m.Seq)
		}
		got[m.Seq] = m.Payload
		return nil
	})
	return got, err
}

func checkIntact(t *testing.T, got map[uint64][]byte, to uint64, except ...uint64) {
	t.Helper()
	skip := map[uint64]bool{}
	for _, s := range except {
		skip[s] = true
	}
	for seq := uint64(1); seq <= to; seq++ {
		p, ok := got[seq]
		switch {
		case skip[seq] && ok:
			t.Fatalf("message %d, damaged in every store, was delivered: %q", seq, p)
		case !skip[seq] && !ok:
			t.Fatalf("message %d was not delivered", seq)
		case ok && string(p) != string(damagePayload(seq)):
			t.Fatalf("message %d delivered as %q, want %q", seq, p, damagePayload(seq))
		}
	}
}

// Messages damaged at rest in a group's leader are never served: the
// leader serves, in their place, intact copies from another member of its
// group or, when every member holds them damaged, from another group; it
// counts them (Status, /metrics). A message damaged in every store of every
// group is reported not held, never delivered damaged. Both serve paths,
// Fetch (receiver.Read) and Deliver (receiver.Follow), are covered.
//
// The damage is made by a hook on the serve paths (Store.DamageAtRest), as
// repository.Read reports it; TestBitFlippedInTheLeadersFileIsHealed does
// the same with real bits flipped in the repository file.
func TestMessageDamagedAtRestInTheLeaderIsServedIntact(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const n = 200
	for g := 1; g <= 2; g++ {
		var payloads [][]byte
		for seq := uint64(1); seq <= n; seq++ {
			payloads = append(payloads, damagePayload(seq))
		}
		if err := c.PublishDirect(ctx, g, "d", 1, payloads); err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Members(g) {
			c.WaitHeld(m.Name, "d", n, 30*time.Second)
		}
	}
	leader := c.WaitLeader(1, 10*time.Second)
	reg := prometheus.NewRegistry()
	reg.MustRegister(leader.Collector())
	var followers []*storegroup.Store
	for _, m := range c.Members(1) {
		if m.Name != leader.Name() {
			followers = append(followers, c.Store(m.Name))
		}
	}
	// 10, 11, 50 (a fetch's edge) and 120: an intact copy on a follower;
	// 150: damaged in every member of group 1, intact in group 2;
	// 180: damaged in every store of both groups.
	leader.DamageAtRest("d", 10, 11, 50, 120, 150, 180)
	followers[0].DamageAtRest("d", 10, 150, 180)
	followers[1].DamageAtRest("d", 11, 150, 180)
	for _, m := range c.Members(2) {
		c.Store(m.Name).DamageAtRest("d", 180)
	}

	got, err := readGroupAlone(t, c, 1, n)
	var missing *receiver.MissingError
	if !errors.As(err, &missing) || !reflect.DeepEqual(missing.Ranges, []receiver.Range{{From: 180, To: 180}}) {
		t.Fatalf("reading group 1 alone: %v, want only 180 reported missing", err)
	}
	checkIntact(t, got, n, 180)
	st := leader.Status().Repair.Damage
	if st.Found != 6 || st.Healed != 5 || st.Pending != 1 || st.CopiesRefused != 0 {
		t.Fatalf("leader's damage status %+v, want 6 found, 5 healed, 1 pending", st)
	}
	if v := metricValue(t, reg, "umstore_messages_corrupt_total", nil); v != 6 {
		t.Fatalf("umstore_messages_corrupt_total = %v, want 6", v)
	}
	if v := metricValue(t, reg, "umstore_messages_corrupt_healed_total", nil); v != 5 {
		t.Fatalf("umstore_messages_corrupt_healed_total = %v, want 5", v)
	}

	// Deliver: damage found by a subscription is healed the same way.
	leader.DamageAtRest("d", 190)
	followers[0].DamageAtRest("d", 190)
	follow := receiver.DefaultConfig()
	follow.Source, follow.Groups, follow.Group = "d", c.Addrs(), 1
	r, err := receiver.New(follow)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	delivered := map[uint64][]byte{}
	var lost []receiver.Range
	err = r.Follow(fctx, 1, func(m receiver.Message) error {
		delivered[m.Seq] = m.Payload
		if m.Seq == n {
			fcancel()
		}
		return nil
	}, func(rg receiver.Range) { lost = append(lost, rg) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow: %v", err)
	}
	checkIntact(t, delivered, n, 180)
	if !reflect.DeepEqual(lost, []receiver.Range{{From: 180, To: 180}}) {
		t.Fatalf("Follow reported %v missing, want only 180", lost)
	}
	if st := leader.Status().Repair.Damage; st.Found != 7 || st.Healed != 6 {
		t.Fatalf("leader's damage status after Follow %+v, want 7 found, 6 healed", st)
	}
}

// A follower that finds a message damaged when another member asks it for
// a copy (Fetch.Local) does not serve it either, and looks for its own copy
// in the background: once found, it serves that copy to the members that
// ask, with its checksum.
func TestLocalFetchNeverServesDamageAndHealsInTheBackground(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	payloads := [][]byte{damagePayload(1), damagePayload(2), damagePayload(3)}
	if err := c.PublishDirect(ctx, 1, "d", 1, payloads); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(1, 10*time.Second)
	var follower storegroup.Member
	for _, m := range c.Members(1) {
		c.WaitHeld(m.Name, "d", 3, 30*time.Second)
		if m.Name != leader.Name() {
			follower = m
		}
	}
	s := c.Store(follower.Name)
	s.DamageAtRest("d", 2)
	cl := dial(t, follower.ClientAddr)
	rep, ok := cl.call(&wire.Fetch{ReqID: 1, Source: "d", From: 1, To: 3, Local: true}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 2 || rep.Msgs[0].Seq != 1 || rep.Msgs[1].Seq != 3 || rep.Through != 3 {
		t.Fatalf("a local fetch of 1..3 with 2 damaged answered %+v, want 1 and 3 through 3", rep)
	}
	for _, m := range rep.Msgs {
		if !m.Verified() {
			t.Fatalf("message %d served without its checksum: %+v", m.Seq, m)
		}
	}
	c.Eventually(20*time.Second, "the follower found a copy of 2", func() bool {
		st := s.Status().Repair.Damage
		return st.Found == 1 && st.Healed == 1 && st.Pending == 0
	})
	rep, ok = cl.call(&wire.Fetch{ReqID: 2, Source: "d", From: 2, To: 2, Local: true}).(*wire.FetchReply)
	if !ok || len(rep.Msgs) != 1 || !rep.Msgs[0].Verified() || string(rep.Msgs[0].Payload) != string(damagePayload(2)) {
		t.Fatalf("a local fetch of 2 after the heal answered %+v", rep)
	}
	// Without Local a follower still redirects to the leader.
	if _, ok := cl.call(&wire.Fetch{ReqID: 3, Source: "d", From: 1, To: 3}).(*wire.NotLeader); !ok {
		t.Fatal("a follower answered a Fetch without Local")
	}
}

// flipInFile flips one bit inside every copy of pattern in the file at
// path, as a disk that rots would, and returns how many it damaged.
func flipInFile(t *testing.T, path string, pattern []byte) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := bytes.Index(data, pattern); i >= 0; {
		data[i+len(pattern)/2] ^= 0x01
		n++
		j := bytes.Index(data[i+1:], pattern)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// The same as TestMessageDamagedAtRestInTheLeaderIsServedIntact with real
// damage: bits flipped inside stored payloads in the files of one store,
// which then leads. It needs the repository to check each message's
// checksum on read (issue 15's storage engine).
func TestBitFlippedInTheLeadersFileIsHealed(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const n = 100
	var payloads [][]byte
	for seq := uint64(1); seq <= n; seq++ {
		payloads = append(payloads, damagePayload(seq))
	}
	if err := c.PublishDirect(ctx, 1, "d", 1, payloads); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members(1) {
		c.WaitHeld(m.Name, "d", n, 30*time.Second)
	}
	victim := c.Members(1)[0]
	c.Stop(victim.Name)
	damaged := 0
	// The payloads are in raft-wal's segments (wal/) and, for a store on
	// raft.db, in repo.db too.
	var files []string
	for _, pattern := range []string{"*", filepath.Join("wal", "*")} {
		found, err := filepath.Glob(filepath.Join(c.DataDir(victim.Name), pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	for _, seq := range []uint64{7, 42, 99} {
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				damaged += flipInFile(t, f, damagePayload(seq))
			}
		}
	}
	if damaged < 3 {
		t.Fatalf("found only %d stored copies of the three payloads to damage", damaged)
	}
	s := c.StartStore(victim.Name)
	c.Eventually(30*time.Second, "the damaged store leads", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		if l.Name() != victim.Name {
			_ = l.TransferLeadership(victim)
			return false
		}
		return true
	})
	got, err := readGroupAlone(t, c, 1, n)
	if err != nil {
		t.Fatalf("reading group 1 alone: %v", err)
	}
	checkIntact(t, got, n)
	if st := s.Status().Repair.Damage; st.Found < 3 || st.Healed < 3 {
		t.Fatalf("the damaged leader's status %+v, want at least 3 found and healed", st)
	}
}

// Intergroup repair reads another group's messages through that group's
// leader, which never serves a payload damaged at rest: a message damaged
// only in the other group's leader reaches the repaired group intact (the
// leader serves its member's copy), one damaged in every store of the
// other group is not copied at all, and nothing damaged is ever stored.
func TestIntergroupRepairNeverCopiesDamage(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, fastRepair)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 50
	var payloads [][]byte
	for seq := uint64(1); seq <= n; seq++ {
		payloads = append(payloads, damagePayload(seq))
	}
	for _, m := range c.Members(2) {
		s := c.Store(m.Name)
		s.DamageAtRest("d", 40) // everywhere in group 2
		if s == c.WaitLeader(2, 10*time.Second) {
			s.DamageAtRest("d", 7, 8) // in its leader only
		}
	}
	// Group 1 never receives the messages: only repair can give them to it.
	if err := c.PublishDirect(ctx, 2, "d", 1, payloads); err != nil {
		t.Fatal(err)
	}
	c.Eventually(30*time.Second, "every store of group 1 holds what group 2 serves intact", func() bool {
		for _, m := range c.Members(1) {
			s := c.Store(m.Name)
			info, ok, err := s.Repository().Source("d")
			if err != nil || !ok || info.Count != n-1 {
				return false
			}
		}
		return true
	})
	for _, m := range c.Members(1) {
		msgs, err := c.Store(m.Name).Repository().Read("d", 1, n, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint64][]byte{}
		for _, msg := range msgs {
			got[msg.Seq] = msg.Payload
		}
		checkIntact(t, got, n, 40)
	}
	if st := c.WaitLeader(1, 10*time.Second).Status().Repair; st.Conflicts != 0 || st.Damage.CopiesRefused != 0 {
		t.Fatalf("group 1's repair %+v: want no conflicts and no damaged copy received", st)
	}
}

// A leader whose own copy of a retained message is damaged at rest still
// brings a wiped member up to date when its log no longer reaches back:
// the snapshot stream carries an intact copy from another member in the
// damaged message's place. Before, the stream failed at that message on
// every try, and the member never caught up (found by the chaos suite:
// corrupt-store, then a wipe, seed 1201 schedule 13).
func TestDamagedLeaderSendsIntactSnapshot(t *testing.T) {
	t.Parallel()
	c := clustertest.New(t, clustertest.Options{Groups: 1, Tune: func(cfg *storegroup.Config) {
		smallSnapshots(cfg)
		cfg.RetentionMaxBytes = 0
		cfg.RetentionMaxMessages = 300
		cfg.RetentionInterval = 100 * time.Millisecond
	}})
	publishEntries(t, c, "d", 600, 100, 10) // messages 1..600, the newest 300 retained
	members := c.Members(1)
	for _, m := range members {
		c.Eventually(30*time.Second, m.Name+" released the oldest 300", func() bool {
			info, ok, err := c.Store(m.Name).Repository().Source("d")
			return err == nil && ok && info.TrimmedThrough == 300
		})
	}
	victim, wiped := members[0].Name, members[1].Name
	c.Stop(wiped)
	c.Wipe(wiped)
	c.Stop(victim)
	damagedPayload := []byte(("d-449-" + strings.Repeat("x", 100))[:100]) // message 450, as publishEntries sends it
	var files []string
	for _, pattern := range []string{"*", filepath.Join("wal", "*")} {
		found, _ := filepath.Glob(filepath.Join(c.DataDir(victim), pattern))
		files = append(files, found...)
	}
	flipped := 0
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			flipped += flipInFile(t, f, damagedPayload)
		}
	}
	if flipped == 0 {
		t.Fatal("found no stored copy of message 450 to damage")
	}
	c.StartStore(victim)
	c.Eventually(30*time.Second, "the damaged store leads", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		if l.Name() != victim {
			_ = l.TransferLeadership(members[0])
			return false
		}
		first, _, _, err := l.LogBounds()
		return err == nil && first > 1 // the wiped member needs a snapshot
	})
	s := c.StartStore(wiped)
	c.Eventually(60*time.Second, wiped+" catches up from the damaged leader's snapshot", func() bool {
		msgs, err := s.Repository().Read("d", 301, 600, 0, 0)
		return err == nil && len(msgs) == 300 && !s.Status().CatchingUp
	})
	msgs, err := s.Repository().Read("d", 450, 450, 1, 0)
	if err != nil || len(msgs) != 1 || !bytes.Equal(msgs[0].Payload, damagedPayload) {
		t.Fatalf("message 450 on %s: %v %v, want the intact payload", wiped, msgs, err)
	}
}
