package storegroup

import "testing"

func TestTrailingFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		bound, avg, max uint64
		want            uint64
	}{
		{"large entries: about bound bytes of them", 256 << 20, 1 << 20, 4096, minTrailingLogs + 256},
		{"small entries: the configured count", 256 << 20, 1 << 10, 4096, 4096},
		{"huge entries: never below the minimum", 1 << 20, 64 << 20, 4096, minTrailingLogs},
		{"configured below the minimum: the configuration", 256 << 20, 1 << 20, 16, 16},
		{"none written yet", 256 << 20, 0, 4096, 4096},
	} {
		if got := trailingFor(tc.bound, tc.avg, tc.max); got != tc.want {
			t.Errorf("%s: trailingFor(%d, %d, %d) = %d, want %d", tc.name, tc.bound, tc.avg, tc.max, got, tc.want)
		}
	}
}
