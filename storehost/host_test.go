package storehost

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

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
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var hs Hosts
	for _, h := range d.Hosts {
		host, err := Start(context.Background(), d, h.Name, filepath.Join(dir, h.Name), DefaultOptions(), log)
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
