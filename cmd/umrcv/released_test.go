package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/storegroup"
)

// Retention keeps 1,000 of 3,000 messages. Without --from umrcv reads the
// 1,000 retained and exits 0; a range asked for with --from that
// retention released is named as released, with exit status 3 (before:
// called held by no group, exit 1); a range within what is retained is
// read in full.
func TestReleasedRangeHasItsOwnExitStatus(t *testing.T) {
	c := clustertest.Start(t, 1, func(cfg *storegroup.Config) {
		cfg.RetentionMaxMessages = 1000
		cfg.RetentionInterval = 100 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for from := uint64(1); from <= 3000; from += 500 {
		var payloads [][]byte
		for seq := from; seq < from+500; seq++ {
			payloads = append(payloads, fmt.Appendf(nil, "m%d", seq))
		}
		if err := c.PublishDirect(ctx, 1, "kept", from, payloads); err != nil {
			t.Fatal(err)
		}
	}
	c.Eventually(20*time.Second, "retention released 1-2000", func() bool {
		l := c.Leader(1)
		if l == nil {
			return false
		}
		info, ok, err := l.Repository().Source("kept")
		return err == nil && ok && info.TrimmedThrough == 2000
	})
	var stores []string
	for _, a := range c.Addrs()[0] {
		stores = append(stores, "--store", a)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		lines  int
		stderr string
	}{
		{"no --from", nil, 0, 1000, ""},
		{"--from oldest", []string{"--from", "oldest"}, 0, 1000, ""},
		{"--from 1", []string{"--from", "1"}, exitReleased, 1000, "released by retention: 1-2000"},
		{"--from 1500 --to 2100", []string{"--from", "1500", "--to", "2100"}, exitReleased, 100, "released by retention: 1500-2000"},
		{"--from 2500", []string{"--from", "2500"}, 0, 501, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append(append([]string{"--source", "kept"}, stores...), tc.args...), &out, &errOut)
			lines := strings.Count(out.String(), "\n")
			if code != tc.code || lines != tc.lines || (tc.stderr == "" && errOut.Len() > 0) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Fatalf("exit %d, %d lines, stderr %q; want exit %d, %d lines, stderr with %q", code, lines, errOut.String(), tc.code, tc.lines, tc.stderr)
			}
		})
	}
}
