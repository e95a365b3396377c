package dirlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"umstore/internal/testmain"
	"umstore/internal/wallclock"
)

// inProcessLease is the lease duration of the in-process tests, which are
// not about timing: long enough for a holder to survive a loaded machine.
const inProcessLease = time.Second

func leaseOpts(t *testing.T, id string) Options {
	return Options{
		Mode:            ModeLease,
		HolderID:        id,
		KeepAlive:       testKeepAlive,
		LeaseDuration:   inProcessLease,
		AcquireInterval: testAcquire,
		Logger:          quietLogger(t),
	}
}

// A standby takes over a lease after its holder is killed, once the lease
// has expired and not before.
func TestLeaseTakeoverAfterExpiry(t *testing.T) {
	testmain.Slow(t)
	t.Parallel()
	dir := t.TempDir()
	h := startChild(t, dir, "H", childOpts{mode: ModeLease})
	h.mustSee("ACQUIRED", 10*time.Second)
	s := startChild(t, dir, "S", childOpts{mode: ModeLease, standby: true})
	if w := s.mustSee("WAITING", 10*time.Second); !strings.Contains(w.text, fmt.Sprintf("pid %d", h.pid())) {
		t.Errorf("waiting line %q does not name the holder pid %d", w.text, h.pid())
	}
	time.Sleep(3 * testLease)
	if s.acquired() {
		t.Fatal("the standby took over a lease that was being renewed")
	}

	// The newest renewal's time on the storage clock, just before the kill.
	st, err := readLease(filepath.Join(dir, leaseDirName))
	if err != nil || !st.found {
		t.Fatalf("reading the lease: %v %+v", err, st)
	}
	killed := time.Now()
	h.kill9()
	l := s.mustSee("ACQUIRED", 5*time.Second)
	if expiry := st.mtime.Add(testLease); l.at.Before(expiry) {
		t.Errorf("standby took over at %v, before the lease expired at %v", l.at.Format(time.StampMilli), expiry.Format(time.StampMilli))
	}
	d := l.at.Sub(killed)
	if max := testLease + 2*testAcquire + time.Second; d > max {
		t.Errorf("standby took over %v after the kill; want at most %v", d, max)
	}
	t.Logf("standby took over %v after the kill (lease %v, acquire interval %v)", d, testLease, testAcquire)
	waitLogged(t, dir, "S", 5*time.Second)
	checkHandOver(t, dir, "S")
}

// A holder stopped (SIGSTOP) past its lease loses it to the standby and,
// once resumed, writes nothing more and reports Lost.
func TestLeaseStoppedHolderStepsDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := startChild(t, dir, "H", childOpts{mode: ModeLease})
	h.mustSee("ACQUIRED", 10*time.Second)
	s := startChild(t, dir, "S", childOpts{mode: ModeLease, standby: true})
	s.mustSee("WAITING", 10*time.Second)

	// Stop the holder just after a write, so that it is asleep and not
	// between a Check and its write (see the package doc on that window).
	if _, _, ok := h.waitFor("WROTE", h.count(), 5*time.Second); !ok {
		t.Fatal("holder does not write")
	}
	h.signal(syscall.SIGSTOP)
	stopped := time.Now()
	resumeFrom := h.count()

	l := s.mustSee("ACQUIRED", 5*time.Second)
	t.Logf("standby took over %v after the holder was stopped", l.at.Sub(stopped))
	waitLogged(t, dir, "S", 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	if d := time.Since(stopped); d < testLease {
		t.Fatalf("holder stopped for only %v", d)
	}
	h.signal(syscall.SIGCONT)

	if _, lost, ok := h.waitFor("LOST", resumeFrom, 5*time.Second); !ok {
		t.Fatal("resumed holder did not report Lost")
	} else if !strings.Contains(lost.text, ErrLost.Error()) {
		t.Errorf("lost line %q", lost.text)
	}
	if code := h.waitExit(5 * time.Second); code != 4 {
		t.Errorf("old holder exit code %d, want 4", code)
	}
	if _, w, ok := h.find("WROTE", resumeFrom); ok {
		t.Errorf("old holder wrote after resuming: %q", w.text)
	}

	// The new holder goes on, undisturbed.
	n := s.count()
	if _, _, ok := s.waitFor("WROTE", n, 2*time.Second); !ok {
		t.Error("new holder stopped writing")
	}
	if _, l, ok := s.find("LOST", 0); ok {
		t.Errorf("new holder: %q", l.text)
	}
	checkHandOver(t, dir, "S")
}

// Two standby processes wait on one lease; its holder is killed; exactly
// one of them takes over.
func TestLeaseStandbysRace(t *testing.T) {
	t.Parallel()
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			h := startChild(t, dir, "H", childOpts{mode: ModeLease})
			h.mustSee("ACQUIRED", 10*time.Second)
			ss := []*child{
				startChild(t, dir, "S1", childOpts{mode: ModeLease, standby: true}),
				startChild(t, dir, "S2", childOpts{mode: ModeLease, standby: true}),
			}
			for _, s := range ss {
				s.mustSee("WAITING", 10*time.Second)
			}
			h.kill9()
			deadline := time.Now().Add(5 * time.Second)
			for !ss[0].acquired() && !ss[1].acquired() && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			// Give the other one every chance to take over as well.
			time.Sleep(testLease + 2*testAcquire + 200*time.Millisecond)
			var winners []*child
			for _, s := range ss {
				if s.acquired() {
					winners = append(winners, s)
				}
			}
			if len(winners) != 1 {
				t.Fatalf("%d standbys acquired the lease, want 1", len(winners))
			}
			waitLogged(t, dir, winners[0].id, 5*time.Second)
			checkHandOver(t, dir, winners[0].id)
			for _, w := range writesLog(t, dir) {
				if w[0] != "H" && w[0] != winners[0].id {
					t.Errorf("loser %s wrote %s", w[0], w[1])
				}
			}
		})
	}
}

// Many processes (goroutines here: the lease does not depend on process
// boundaries) go for one expired lease at the same instant; one wins.
func TestLeaseTakeoverCompareAndSwap(t *testing.T) {
	t.Parallel()
	const racers = 8
	for round := range 20 {
		dir := t.TempDir()
		ldir := filepath.Join(dir, leaseDirName)
		if err := os.MkdirAll(ldir, 0o755); err != nil {
			t.Fatal(err)
		}
		dead := leaseRecord{Info: Info{ID: "dead", PID: 1, Host: "elsewhere"}, Version: 7, LeaseMS: inProcessLease.Milliseconds()}
		if err := writeVersion(ldir, 7, dead); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(filepath.Join(ldir, versionName(7)), old, old); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		locks := make([]Lock, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				locks[i], errs[i] = Acquire(context.Background(), dir, leaseOpts(t, fmt.Sprintf("r%d-%d", round, i)))
			})
		}
		close(start)
		wg.Wait()
		var winner Lock
		for i, err := range errs {
			switch {
			case err == nil && winner == nil:
				winner = locks[i]
			case err == nil:
				t.Errorf("round %d: two winners: %s and %s", round, winner.HolderID(), locks[i].HolderID())
				locks[i].Release()
			case !errors.Is(err, ErrLocked):
				t.Errorf("round %d: racer %d: %v", round, i, err)
			}
		}
		if winner == nil {
			t.Fatalf("round %d: nobody took the expired lease over", round)
		}
		st, err := readLease(ldir)
		// Version 8 is the takeover; later ones are the winner's renewals.
		if err != nil || st.version < 8 || st.rec == nil || st.rec.ID != winner.HolderID() {
			t.Errorf("round %d: lease after takeover: version %d, record %+v, err %v; want version ≥ 8 held by %s",
				round, st.version, st.rec, err, winner.HolderID())
		}
		winner.Release()
	}
}

// Hosts whose clocks are far apart still agree on the lease, because both
// judge it on the storage's clock.
func TestLeaseClockSkew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	ho := leaseOpts(t, "slow-clock")
	ho.wallOffset = -30 * time.Second
	h, err := Acquire(ctx, dir, ho)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()

	so := leaseOpts(t, "fast-clock")
	so.wallOffset = 30 * time.Second
	skew, err := storageSkew(filepath.Join(dir, leaseDirName), so)
	if err != nil {
		t.Fatal(err)
	}
	if skew > -29*time.Second || skew < -31*time.Second {
		t.Errorf("measured skew %v, want about -30s", skew)
	}
	_, err = Acquire(ctx, dir, so)
	var le *LockedError
	if !errors.As(err, &le) || le.ExpiresIn <= 0 || le.ExpiresIn > inProcessLease || le.Holder == nil || le.Holder.ID != "slow-clock" {
		t.Fatalf("Acquire by a host whose clock is a minute ahead: %v", err)
	}
	if !strings.Contains(err.Error(), "expires in") {
		t.Errorf("error %q does not say when the lease expires", err)
	}

	// A standby watching for several lease durations never takes over.
	so.Standby = true
	cctx, cancel := context.WithTimeout(ctx, 2*inProcessLease)
	defer cancel()
	if _, err := Acquire(cctx, dir, so); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("standby Acquire on a renewed lease: %v", err)
	}
	if err := h.Check(); err != nil {
		t.Fatalf("holder Check: %v", err)
	}

	// A released lease is taken over at the first attempt.
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := h.Check(); !errors.Is(err, ErrReleased) {
		t.Errorf("Check after Release: %v", err)
	}
	start := time.Now()
	l, err := Acquire(ctx, dir, so)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > inProcessLease/2 {
		t.Errorf("taking over a released lease took %v", d)
	}
	l.Release()
}

// A holder whose next lease version is taken by someone else reports Lost
// within a keep-alive period.
func TestLeaseHolderNoticesTakeover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, leaseDirName)
	l, err := Acquire(context.Background(), dir, leaseOpts(t, "victim"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	thief := leaseRecord{Info: Info{ID: "thief", PID: 42, Host: "elsewhere"}, LeaseMS: inProcessLease.Milliseconds()}
	for {
		st, err := readLease(ldir)
		if err != nil {
			t.Fatal(err)
		}
		thief.Version = st.version + 1
		err = writeVersion(ldir, thief.Version, thief)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * testKeepAlive):
		t.Fatal("holder did not notice the takeover")
	}
	err = l.Check()
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "thief") {
		t.Errorf("Check after takeover: %v", err)
	}
	if st, _ := readLease(ldir); st.rec == nil || st.rec.ID != "thief" {
		t.Errorf("the holder overwrote the new lease: %+v", st.rec)
	}
}

// Without --standby, a live lease is refused at once; the lease of a
// process of this host that has died is waited for instead.
func TestLeaseDeadHolderOnThisHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	const lease = 2 * time.Second // so that failing at once and waiting differ clearly
	h := startChild(t, dir, "H", childOpts{mode: ModeLease, lease: lease})
	h.mustSee("ACQUIRED", 10*time.Second)

	start := time.Now()
	_, err := Acquire(ctx, dir, leaseOpts(t, "me"))
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != h.pid() || le.Mode != ModeLease {
		t.Fatalf("Acquire on a live lease: %v", err)
	}
	if d := time.Since(start); d > lease/2 {
		t.Errorf("refusing took %v", d)
	}

	h.kill9()
	start = time.Now()
	l, err := Acquire(ctx, dir, leaseOpts(t, "me"))
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	defer l.Release()
	d := time.Since(start)
	if d > lease+testAcquire+time.Second {
		t.Errorf("waited %v for a dead holder's lease", d)
	}
	t.Logf("waited %v for the lease of a dead holder (lease %v)", d, lease)
	if err := l.Check(); err != nil {
		t.Error(err)
	}
}

// A process whose wall clock is stepped an hour forward, then an hour back,
// while a lease is held, neither takes the lease as a standby nor loses it
// as the holder: the holder counts on its boot clock and the standby on
// the storage's (wallclock is this process's clock, which a step moves).
func TestLeaseClockStep(t *testing.T) {
	testmain.Slow(t)
	t.Cleanup(func() { wallclock.Set(0) })
	dir := t.TempDir()
	ctx := context.Background()
	h, err := Acquire(ctx, dir, leaseOpts(t, "holder"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	so := leaseOpts(t, "standby")
	so.Standby = true
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		wallclock.Set(step)
		cctx, cancel := context.WithTimeout(ctx, 2*inProcessLease)
		_, err := Acquire(cctx, dir, so)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("with the clock stepped %v a standby's Acquire of a renewed lease: %v", step, err)
		}
		if err := h.Check(); err != nil {
			t.Fatalf("with the clock stepped %v the holder's Check: %v", step, err)
		}
	}
}

// A claim whose write takes longer than the lease is valid is handed back
// and tried again; storage that stays that slow makes Acquire fail, with
// the lease left released for the next process.
func TestLeaseSlowClaimIsRetried(t *testing.T) {
	testmain.Slow(t)
	for _, tc := range []struct {
		name    string
		slow    int // claims made slow before writes are fast again
		wantErr bool
	}{
		{"one slow write", 1, false},
		{"as many as are retried", maxSlowClaims, false},
		{"storage stays slow", maxSlowClaims + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := leaseOpts(t, "slow")
			valid := o.LeaseDuration - o.LeaseDuration/3
			claims := 0
			leaseClaimWritten = func() {
				if claims++; claims <= tc.slow {
					time.Sleep(valid + 50*time.Millisecond)
				}
			}
			t.Cleanup(func() { leaseClaimWritten = func() {} })

			l, err := Acquire(context.Background(), dir, o)
			st, rerr := readLease(filepath.Join(dir, leaseDirName))
			if rerr != nil || !st.found || st.rec == nil {
				t.Fatalf("reading the lease: %v %+v", rerr, st)
			}
			if tc.wantErr {
				if !errors.Is(err, errSlowClaim) || l != nil {
					t.Fatalf("Acquire on storage that stays slow: %v, want %v", err, errSlowClaim)
				}
				if claims != maxSlowClaims+1 {
					t.Errorf("%d claims, want %d", claims, maxSlowClaims+1)
				}
				if !st.rec.Released {
					t.Errorf("the last slow claim was not handed back: %+v", st.rec)
				}
				return
			}
			if err != nil {
				t.Fatalf("Acquire after %d slow claims: %v", tc.slow, err)
			}
			defer l.Release()
			if err := l.Check(); err != nil {
				t.Error(err)
			}
			// Each slow claim wrote a version and its release: ours follows.
			if want := uint64(2*tc.slow + 1); st.version != want || st.rec.Released || st.rec.ID != "slow" {
				t.Errorf("lease after %d slow claims: version %d released %v holder %q, want version %d held by us",
					tc.slow, st.version, st.rec.Released, st.rec.ID, want)
			}
		})
	}
}
