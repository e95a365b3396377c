package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
)

// Printable text is printed as it is; anything that could break the
// one-message-per-line format or reach the terminal as a control sequence
// is printed as base64.
func TestShowPayload(t *testing.T) {
	for _, tc := range []struct {
		payload string
		plain   bool
	}{
		{"hello world", true},
		{"tab\tseparated", true},
		{"Grüße, 世界 ✓", true},
		{"no\u00a0break", true},
		{"", true},
		{"two\nlines", false},
		{"cr\rreturn", false},
		{"esc\x1b[2J", false},
		{"csi\u009b2J", false},
		{"del\x7f", false},
		{"rtl\u202eevil", false},
		{"line\u2028separator", false},
		{"bad\xffutf8", false},
	} {
		got := showPayload([]byte(tc.payload))
		if tc.plain && got != tc.payload {
			t.Errorf("%q shown as %q, want it as it is", tc.payload, got)
		}
		if !tc.plain && !strings.HasPrefix(got, "base64:") {
			t.Errorf("%q shown as %q, want base64", tc.payload, got)
		}
	}
}

// A source name the stores would refuse is a usage error, named escaped.
func TestSourceNameChecked(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--store", "127.0.0.1:1", "--source", "evil\x1b[2J"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `--source: invalid source name: "evil\x1b[2J"`) || strings.Contains(errOut.String(), "\x1b") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// umrcv does not register, so a RegID in its store list is refused rather
// than ignored.
func TestStoreListRegIDRefused(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"--store", "127.0.0.1:1:1000:0", "--source", "s"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "umrcv reads without registering") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// A source no group has ever held (a typo) is an error naming the sources
// the stores do hold, not an empty success. Before, umrcv printed nothing
// and exited 0.
func TestUnknownSourceIsAnError(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.PublishDirect(ctx, 1, "orders", 1, [][]byte{[]byte("one")}); err != nil {
		t.Fatal(err)
	}
	var stores []string
	for _, a := range c.Addrs()[0] {
		stores = append(stores, "--store", a)
	}
	var out, errOut bytes.Buffer
	code := run(append(stores, "--source", "ordres"), &out, &errOut)
	if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), `source "ordres" is unknown`) || !strings.Contains(errOut.String(), "they hold: orders") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(append(stores, "--source", "orders"), &out, &errOut); code != 0 || out.String() != "1 one\n" {
		t.Fatalf("the known source: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
