package publisher

import (
	"testing"

	"umstore/wire"
)

// A Publish frame never grows past what a store reads: the first payload
// always goes (Send refused anything larger), the next only while the
// frame stays within wire.MaxPayload with its framing and checksums.
func TestFitsFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		count, size, next int
		fits              bool
	}{
		{"the largest payload alone", 0, 0, wire.MaxPayload, true},
		{"the largest after a small one", 1, 100, wire.MaxPayload, false},
		{"a small one after the largest", 1, wire.MaxPayload, 1, false},
		{"small ones", 10, 10 << 10, 1 << 10, true},
		{"up to the bound with framing and checksums", 1, wire.MaxPayload/2 - perPayloadOverhead, wire.MaxPayload/2 - perPayloadOverhead, true},
		{"one byte past the bound", 1, wire.MaxPayload/2 - perPayloadOverhead, wire.MaxPayload/2 - perPayloadOverhead + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fitsFrame(tt.count, tt.size, tt.next); got != tt.fits {
				t.Fatalf("fitsFrame(%d, %d, %d) = %v, want %v", tt.count, tt.size, tt.next, got, tt.fits)
			}
		})
	}
}
