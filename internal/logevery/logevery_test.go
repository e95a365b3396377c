package logevery

import (
	"testing"
	"time"
)

// One warning per interval; the next one counts those held back.
func TestLogEvery(t *testing.T) {
	l := Every{Interval: 10 * time.Second}
	now := time.Unix(1000, 0)
	if _, ok := l.Allow(now); !ok {
		t.Fatal("the first warning was held back")
	}
	for i := 1; i <= 5; i++ {
		if _, ok := l.Allow(now.Add(time.Duration(i) * time.Second)); ok {
			t.Fatalf("warning %d within the interval was let through", i)
		}
	}
	if dropped, ok := l.Allow(now.Add(10 * time.Second)); !ok || dropped != 5 {
		t.Fatalf("after the interval: allowed %v, dropped %d; want true and 5", ok, dropped)
	}
}
