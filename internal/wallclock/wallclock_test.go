package wallclock

import (
	"testing"
	"time"
)

// A step moves Now by its offset and is undone by setting 0; Now carries no
// monotonic reading, so comparing it with an earlier Now sees the step, as
// a real step of the system clock would be seen.
func TestStep(t *testing.T) {
	t.Cleanup(func() { Set(0) })
	before := Now()
	if prev := Set(time.Hour); prev != 0 {
		t.Fatalf("offset before the first step = %v, want 0", prev)
	}
	after := Now()
	if d := after.Sub(before); d < time.Hour || d > time.Hour+time.Minute {
		t.Fatalf("a one-hour step moved Now by %v", d)
	}
	if prev := Set(-time.Hour); prev != time.Hour {
		t.Fatalf("Set returned %v, want the hour it replaced", prev)
	}
	if d := Now().Sub(before); d > -59*time.Minute {
		t.Fatalf("a step back of an hour left Now %v after the first reading", d)
	}
	Set(0)
	if d := time.Since(Now()); d < -time.Second || d > time.Second {
		t.Fatalf("with the offset back at 0, Now is %v from the system clock", d)
	}
	if Offset() != 0 {
		t.Fatalf("Offset = %v after Set(0)", Offset())
	}
}
