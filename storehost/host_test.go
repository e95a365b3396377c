package storehost

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"umstore/internal/testports"
	"umstore/placement"
	"umstore/storegroup"
)

// freePort returns a loopback port no other test binary is given (see
// internal/testports).
func freePort(t *testing.T) int { return testports.Port(t) }

// devOnFreePorts is the dev topology with ports picked free.
func devOnFreePorts(t *testing.T) *placement.Deployment {
	d := placement.Dev("127.0.0.1", 14000)
	for gi := range d.Groups {
		for si := range d.Groups[gi].Stores {
			d.Groups[gi].Stores[si].RaftPort = freePort(t)
			d.Groups[gi].Stores[si].ClientPort = freePort(t)
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	return d
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// startAll starts every host of d in dir and waits for both leaders.
func startAll(t *testing.T, d *placement.Deployment, dir string) Hosts {
	t.Helper()
	return startAllWith(t, d, dir, BaseConfig(placement.DefaultPolicy()))
}

// startAllWith is startAll with the stores' base configuration.
func startAllWith(t *testing.T, d *placement.Deployment, dir string, base storegroup.Config) Hosts {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var hs Hosts
	for _, h := range d.Hosts {
		host, err := Start(context.Background(), d, h.Name, filepath.Join(dir, h.Name), base, log)
		if err != nil {
			hs.Stop()
			t.Fatal(err)
		}
		hs = append(hs, host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := hs.WaitLeaders(ctx, log); err != nil {
		hs.Stop()
		t.Fatalf("no leaders: %v", err)
	}
	return hs
}

// serve runs Serve in the background; the channel yields its result.
func serve(ctx context.Context, hs Hosts) <-chan error {
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ctx, slog.New(slog.DiscardHandler)) }()
	return done
}

func waitServe(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: Serve: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Serve did not return", what)
	}
}

// Both hosts of the dev topology run in one process: every group elects a
// leader; Serve returns once every store has stopped (umstored stop), or
// at a signal after stopping them; every stop is clean.
func TestHostsServeAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six stores")
	}
	d := devOnFreePorts(t)
	dir := t.TempDir()

	hs := startAll(t, d, dir)
	if got := hs.Names(); len(got) != 2 || got[0] != "A" || got[1] != "B" || len(hs.Stores()) != 6 {
		t.Fatalf("hosts %v, %d stores", got, len(hs.Stores()))
	}
	done := serve(context.Background(), hs)
	hs.Stop() // as umstored stop would, store by store
	waitServe(t, done, "every store stopped")

	hs = startAll(t, d, dir)
	for _, s := range hs.Stores() {
		if st := s.Status(); st.LastStop != storegroup.StopClean {
			t.Errorf("%s: last stop %q, want clean", s.Name(), st.LastStop)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = serve(ctx, hs)
	cancel() // SIGTERM
	waitServe(t, done, "signal")
	for _, s := range hs.Stores() {
		select {
		case <-s.Done():
		default:
			t.Errorf("%s still runs after Serve returned", s.Name())
		}
	}
}

// A store that cannot start (here its data directory is a file) fails
// alone: the host's other stores start and their groups elect leaders;
// Serve ends with ErrStoreStopped, as for a store that stopped itself. A
// host none of whose stores can start fails to start. Before, one store's
// error stopped every store of the host (chaos seed 1209, schedule 99: a
// damaged meta file of one store took a host of three down).
func TestStoreThatCannotStartFailsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six stores")
	}
	d := devOnFreePorts(t)
	dir := t.TempDir()
	refs := d.StoresOn("B")
	blocked := refs[0].Store.Name
	startAll(t, d, dir).Stop() // a new group waits for all its members
	path := filepath.Join(dir, "B", blocked)
	if err := os.Rename(path, path+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}

	hs := startAll(t, d, dir)
	defer hs.Stop()
	var b *Host
	for _, h := range hs {
		if h.Name() == "B" {
			b = h
		}
	}
	if got := b.Failed(); len(got) != 1 || got[0] != blocked {
		t.Fatalf("host B's failed stores = %v, want [%s]", got, blocked)
	}
	if err := b.StartErr(); err == nil || !strings.Contains(err.Error(), blocked) {
		t.Errorf("host B's StartErr = %v, want the error of store %s", err, blocked)
	}
	if len(b.Stores()) != len(refs)-1 || len(hs.Stores()) != 5 {
		t.Fatalf("host B runs %d stores (all hosts %d), want %d (5)", len(b.Stores()), len(hs.Stores()), len(refs)-1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := serve(ctx, hs)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStoreStopped) || !strings.Contains(err.Error(), blocked) {
			t.Fatalf("Serve = %v, want %v naming %s", err, ErrStoreStopped, blocked)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}

	// Every store of a host blocked: the host does not start.
	other := t.TempDir()
	for _, ref := range refs {
		if err := os.WriteFile(filepath.Join(other, ref.Store.Name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := Start(context.Background(), d, "B", other, BaseConfig(placement.DefaultPolicy()), log)
	if err == nil {
		h.Stop()
		t.Fatal("a host none of whose stores can start started")
	}
	for _, ref := range refs {
		if !strings.Contains(err.Error(), ref.Store.Name) {
			t.Errorf("the error does not name %s: %v", ref.Store.Name, err)
		}
	}
}
