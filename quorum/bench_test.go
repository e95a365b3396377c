package quorum

import "testing"

// BenchmarkConfirm measures the publisher's steady state: two groups each
// confirming consecutive 64-message ranges, in order, group 0 slightly ahead.
func BenchmarkConfirm(b *testing.B) {
	for _, beh := range []Behavior{Any, Majority, AllActive, All} {
		b.Run(beh.String(), func(b *testing.B) {
			tr := NewTracker(beh, 2, 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				from := uint64(i/2)*64 + 1
				tr.Confirm(i%2, Range{from, from + 63})
			}
		})
	}
}

// BenchmarkConfirmOutOfOrder is BenchmarkConfirm with each group's ranges
// arriving in reverse within windows of 16, so the interval sets hold up to
// 16 runs and W advances in 1024-message jumps.
func BenchmarkConfirmOutOfOrder(b *testing.B) {
	const window = 16
	tr := NewTracker(Majority, 2, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i / 2
		block := n/window*window + (window - 1 - n%window)
		from := uint64(block)*64 + 1
		tr.Confirm(i%2, Range{from, from + 63})
	}
}
