package receiver_test

import (
	"errors"
	"math"
	"reflect"
	"runtime"
	"testing"

	"umstore/internal/clustertest"
	"umstore/receiver"
)

// Reading a range far wider than the source costs what the source holds,
// not a slot per sequence number in the range: on the code that allocated
// one, [1, 10^7] took some 250 MB for three messages, [1, 4*10^9] ran out
// of memory and [1, 2^64-1] panicked. The range past the source's end is
// named as missing, whole.
func TestReadAWideRangeOfASmallSource(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil)
	publish(t, c, "small", 3)
	tests := []struct {
		name string
		to   uint64
	}{
		{"ten million", 10_000_000},
		{"four billion", 4_000_000_000},
		{"2^64-1", math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("Read panicked: %v", p)
				}
			}()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			seqs, err := read(t, c, "small", 0, 1, tt.to)
			runtime.ReadMemStats(&after)
			if !reflect.DeepEqual(seqs, []uint64{1, 2, 3}) {
				t.Fatalf("read %v, want 1, 2, 3", seqs)
			}
			var missing *receiver.MissingError
			if !errors.As(err, &missing) || !reflect.DeepEqual(missing.Ranges, []receiver.Range{{From: 4, To: tt.to}}) {
				t.Fatalf("err = %v, want the missing range 4-%d", err, tt.to)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Fatalf("reading [1, %d] of a 3-message source allocated %d MiB", tt.to, grew>>20)
			}
		})
	}
}
