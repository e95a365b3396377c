package clientserver

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The window refuses one more slot past each of its bounds, until a slot
// is freed; a slot waited for is given up when the connection ends.
func TestWindowBounds(t *testing.T) {
	tests := []struct {
		name    string
		fill    func(w *window) []func() // takes slots up to a bound, returning their releases
		blocked string                   // the source whose next take must wait
		other   string                   // a source that may still take, "" if none may
	}{
		{
			name: "a source's proposals",
			fill: func(w *window) []func() {
				return takeN(t, w, "a", maxProposalsInFlight, 10)
			},
			blocked: "a", other: "b",
		},
		{
			name: "the connection's proposals",
			fill: func(w *window) []func() {
				var rs []func()
				for i := 0; len(rs) < maxConnProposals; i++ {
					rs = append(rs, takeN(t, w, fmt.Sprintf("s%d", i), min(maxProposalsInFlight, maxConnProposals-len(rs)), 10)...)
				}
				return rs
			},
			blocked: "fresh",
		},
		{
			name: "the connection's bytes",
			fill: func(w *window) []func() {
				var rs []func()
				for i := 0; i*(512<<10) < maxConnBytes; i++ {
					rs = append(rs, takeN(t, w, fmt.Sprintf("big%d", i), 1, 512<<10)...)
				}
				return rs
			},
			blocked: "fresh",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			releases := tt.fill(w)
			took := make(chan bool, 1)
			go func() { took <- w.take(ctx, tt.blocked) }()
			select {
			case <-took:
				t.Fatalf("a slot for %s was taken past the bound", tt.blocked)
			case <-time.After(50 * time.Millisecond):
			}
			if tt.other != "" && !w.take(ctx, tt.other) {
				t.Fatalf("source %s was kept waiting by %s's full window", tt.other, tt.blocked)
			}
			releases[len(releases)-1]()
			releases[len(releases)-1]() // a second call frees nothing more
			if !<-took {
				t.Fatal("a freed slot was not taken")
			}
			w.hold(tt.blocked, 512<<10) // full again, whichever bound
			go func() { took <- w.take(ctx, tt.blocked) }()
			time.Sleep(10 * time.Millisecond)
			cancel()
			if <-took {
				t.Fatal("a slot was taken from a full window after the connection ended")
			}
		})
	}
}

// takeN takes n slots for source, each holding size bytes, and returns
// their releases.
func takeN(t *testing.T, w *window, source string, n, size int) []func() {
	t.Helper()
	var rs []func()
	for i := range n {
		if !w.take(context.Background(), source) {
			t.Fatalf("slot %d of %s refused", i+1, source)
		}
		rs = append(rs, w.hold(source, size))
	}
	return rs
}
