package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Until never returns more than early before the due time, returns at once for one past,
// and gives up when its context ends. (How late it returns is measured in
// BENCH.md, not here: this machine is shared.)
func TestUntil(t *testing.T) {
	for _, wait := range []time.Duration{-time.Second, 0, 300 * time.Microsecond, 5 * time.Millisecond} {
		due := time.Now().Add(wait)
		if err := Until(context.Background(), due); err != nil {
			t.Fatalf("wait %v: %v", wait, err)
		}
		if now := time.Now(); now.Before(due.Add(-early)) {
			t.Fatalf("wait %v: returned %v before it was due", wait, due.Sub(now))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Until(ctx, start.Add(time.Hour)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v, want the context's error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("cancelled wait took %v", took)
	}
}
