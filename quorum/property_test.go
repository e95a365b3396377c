package quorum

import (
	"fmt"
	"math/rand"
	"testing"
)

// span is how many sequence numbers above base the random tests use; small
// enough that confirmations collide often.
const span = 60

// TestTrackerMatchesReference drives Tracker and refTracker with the same
// random calls, for every behaviour and 1 to 4 groups, and compares every
// answer after every call.
func TestTrackerMatchesReference(t *testing.T) {
	const (
		trackersPerCase = 20
		stepsPerTracker = 100 // 2000 random steps per behaviour and group count
	)
	for _, b := range []Behavior{Any, Majority, AllActive, All} {
		for groups := 1; groups <= 4; groups++ {
			t.Run(fmt.Sprintf("%v/%d", b, groups), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(b)*100 + int64(groups)))
				for trial := 0; trial < trackersPerCase; trial++ {
					base := []uint64{1, 1, 2, 7, 100}[rng.Intn(5)]
					tr := NewTracker(b, groups, base)
					ref := newRef(b, groups, base)
					var log []string
					for i := 0; i < stepsPerTracker; i++ {
						desc, msg := randomStep(rng, tr, ref)
						log = append(log, desc)
						if msg == "" {
							msg = ref.diff(tr, base+span+3)
						}
						if msg != "" {
							t.Fatalf("base %d, after steps %v:\n%s", base, log, msg)
						}
					}
				}
			})
		}
	}
}

// randomStep makes one random call on both trackers and returns a
// description of it and a mismatch in what the call returned, if any.
func randomStep(rng *rand.Rand, tr *Tracker, ref *refTracker) (desc, mismatch string) {
	g := rng.Intn(ref.n)
	prev := ref.stable
	switch p := rng.Intn(100); {
	case p < 15:
		active := rng.Intn(2) == 0
		newly, adv := tr.SetActive(g, active)
		ref.setActive(g, active)
		return fmt.Sprintf("active(%d,%v)", g, active), checkStep(newly, adv, prev, ref.stable)
	case p < 20:
		through := ref.stable + uint64(rng.Intn(8))
		through -= min(through, uint64(rng.Intn(8)))
		tr.Forget(through)
		ref.forget(through)
		return fmt.Sprintf("forget(%d)", through), ""
	default:
		// Mostly short ranges, sometimes long ones, sometimes reaching
		// below base.
		from := ref.base + uint64(rng.Intn(span))
		from -= min(from, uint64(rng.Intn(4)))
		length := uint64(rng.Intn(6))
		if rng.Intn(10) == 0 {
			length = uint64(rng.Intn(span))
		}
		r := Range{from, from + length}
		if rng.Intn(20) == 0 {
			r = Range{r.To, r.From} // empty unless a single number
		}
		newly, adv := tr.Confirm(g, r)
		ref.confirm(g, r.From, r.To)
		return fmt.Sprintf("confirm(%d,%v)", g, r), checkStep(newly, adv, prev, ref.stable)
	}
}

// FuzzTracker replays a byte string as calls on Tracker and the reference
// model. Each call takes three bytes: an opcode byte, then two argument
// bytes. `go test` runs only the seeds; use -fuzz=FuzzTracker to explore.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 3, 1, 10, 0, 0, 1, 0, 5, 3, 0, 0})
	f.Add([]byte{0x12, 1, 1, 4, 0x10, 0, 5, 0, 9, 0x01, 3, 0, 0x21, 2, 4, 2, 7, 0})
	f.Add([]byte{0x33, 9, 1, 0x30, 1, 0, 0x02, 2, 0, 0x31, 5, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		b := Behavior(data[0] >> 4 % 4)
		groups := int(data[0]%4) + 1
		base := uint64(data[0]>>6) + 1
		tr := NewTracker(b, groups, base)
		ref := newRef(b, groups, base)
		for i := 1; i+2 < len(data); i += 3 {
			op, x, y := data[i], data[i+1], data[i+2]
			g := int(op>>2) % groups
			prev := ref.stable
			var msg string
			switch op % 4 {
			case 0, 1: // confirm x..x+y%16
				r := Range{uint64(x % 64), uint64(x%64) + uint64(y%16)}
				newly, adv := tr.Confirm(g, r)
				ref.confirm(g, r.From, r.To)
				msg = checkStep(newly, adv, prev, ref.stable)
			case 2: // set active
				newly, adv := tr.SetActive(g, x%2 == 0)
				ref.setActive(g, x%2 == 0)
				msg = checkStep(newly, adv, prev, ref.stable)
			case 3:
				tr.Forget(uint64(x % 80))
				ref.forget(uint64(x % 80))
			}
			if msg == "" {
				msg = ref.diff(tr, 82)
			}
			if msg != "" {
				t.Fatalf("%v groups=%d base=%d, call %d (%d %d %d): %s", b, groups, base, i/3, op, x, y, msg)
			}
		}
	})
}
