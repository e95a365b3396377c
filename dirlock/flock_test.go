package dirlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second process without --standby fails at once and names the holder.
func TestFlockSecondProcessFailsFast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startChild(t, dir, "A", childOpts{mode: ModeFlock})
	a.mustSee("ACQUIRED", 10*time.Second)

	b := startChild(t, dir, "B", childOpts{mode: ModeFlock})
	l := b.mustSee("ERROR", 10*time.Second)
	for _, want := range []string{
		fmt.Sprintf("pid %d", a.pid()),
		ErrLocked.Error(),
		"store T1's data directory " + dir,
		"holder id A",
		"--standby",
	} {
		if !strings.Contains(l.text, want) {
			t.Errorf("error %q does not contain %q", l.text, want)
		}
	}
	if code := b.waitExit(5 * time.Second); code != 3 {
		t.Errorf("second process exit code %d, want 3", code)
	}

	// The same from this process, with the error's details.
	start := time.Now()
	_, err := Acquire(context.Background(), dir, Options{Name: "G1S1", Logger: quietLogger(t)})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("failing took %v", d)
	}
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != a.pid() || le.Holder.ID != "A" || le.Mode != ModeFlock {
		t.Errorf("LockedError = %+v, want holder pid %d id A", le, a.pid())
	}
}

// Two standbys race for one directory: one wins, the other waits and takes
// over quickly once the winner is killed with SIGKILL.
func TestFlockStandbyTakeover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cs := []*child{
		startChild(t, dir, "A", childOpts{mode: ModeFlock, standby: true}),
		startChild(t, dir, "B", childOpts{mode: ModeFlock, standby: true}),
	}
	var winner, waiter *child
	deadline := time.Now().Add(10 * time.Second)
	for winner == nil && time.Now().Before(deadline) {
		for i, c := range cs {
			if c.acquired() {
				winner, waiter = c, cs[1-i]
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if winner == nil {
		t.Fatal("neither standby acquired the lock")
	}
	// The first report may come before the winner has described itself;
	// the waiter reports again once it knows the holder.
	if _, _, ok := waiter.waitFor(fmt.Sprintf("WAITING pid %d ", winner.pid()), 0, 10*time.Second); !ok {
		t.Errorf("the waiting process never named the holder pid %d", winner.pid())
	}
	time.Sleep(600 * time.Millisecond)
	if waiter.acquired() {
		t.Fatal("both processes acquired the lock")
	}

	killed := time.Now()
	winner.kill9()
	l := waiter.mustSee("ACQUIRED", 5*time.Second)
	if d := l.at.Sub(killed); d > 2*time.Second {
		t.Errorf("standby took over %v after the kill; want < 2s with a %v acquire interval", d, DefaultFlockAcquireInterval)
	} else {
		t.Logf("standby took over %v after the kill", d)
	}
	waitLogged(t, dir, waiter.id, 5*time.Second)
	checkHandOver(t, dir, waiter.id)
}

func TestFlockInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	o := Options{Name: "G1S1", HolderID: "me", Logger: quietLogger(t)}
	l, err := Acquire(ctx, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if l.HolderID() != "me" {
		t.Errorf("HolderID = %q", l.HolderID())
	}
	info := readInfoFile(filepath.Join(dir, lockInfoFileName))
	if info == nil || info.ID != "me" || info.PID != os.Getpid() || info.Mode != ModeFlock {
		t.Errorf("LOCK.info = %+v", info)
	}

	// flock conflicts between open files even in one process.
	_, err = Acquire(ctx, dir, Options{Logger: quietLogger(t)})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.ID != "me" {
		t.Fatalf("second Acquire: %v", err)
	}

	// A standby gives up when its context ends, having said whom it waited for.
	var waited []string
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = Acquire(cctx, dir, Options{Standby: true, Logger: quietLogger(t),
		OnWait: func(h string) { waited = append(waited, h) }})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("standby Acquire: %v, want deadline exceeded", err)
	}
	if len(waited) != 1 || !strings.Contains(waited[0], "holder id me") {
		t.Errorf("OnWait calls: %q", waited)
	}

	select {
	case <-l.Lost():
		t.Fatal("a flock reported lost")
	default:
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := l.Check(); !errors.Is(err, ErrReleased) {
		t.Errorf("Check after Release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, lockInfoFileName)); !os.IsNotExist(err) {
		t.Errorf("LOCK.info left after Release: %v", err)
	}
	l2, err := Acquire(ctx, dir, o)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

// A flock-mode process refuses a directory whose lease is live.
func TestFlockRefusesLiveLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	ll, err := Acquire(ctx, dir, leaseOpts(t, "leaser"))
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Release()
	_, err = Acquire(ctx, dir, Options{Logger: quietLogger(t)})
	var le *LockedError
	if !errors.As(err, &le) || le.Mode != ModeLease || le.Holder == nil || le.Holder.ID != "leaser" {
		t.Fatalf("flock Acquire over a live lease: %v", err)
	}
	if err := ll.Release(); err != nil {
		t.Fatal(err)
	}
	fl, err := Acquire(ctx, dir, Options{Logger: quietLogger(t)})
	if err != nil {
		t.Fatalf("flock Acquire after the lease was released: %v", err)
	}
	fl.Release()
}
