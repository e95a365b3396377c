package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// UM names umpub accepts or refuses before it connects to anything.
func TestUsageOfUMFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"RegID not a number", []string{"--store", "127.0.0.1:1:abc:0"}, `RegID "abc" is not a number`},
		{"RegID and session ID", []string{"--store", "127.0.0.1:1:7:0", "--session-id", "0x10"}, "not both"},
		{"session ID too large", []string{"--store", "127.0.0.1:1", "--session-id", "0xFFFFFFFFFFFFFFFF"}, "--session-id"},
		{"session ID not a number", []string{"--store", "127.0.0.1:1", "--session-id", "abc"}, "--session-id"},
		{"flight behaviour", []string{"--store", "127.0.0.1:1", "--flight-size-behavior", "drop"}, `--flight-size-behavior "drop": want block or notify`},
		{"flight bytes", []string{"--store", "127.0.0.1:1", "--flight-size-bytes", "-1"}, "--flight-size-bytes"},
		{"lifetime", []string{"--store", "127.0.0.1:1", "--stability-lifetime", "-1s"}, "--stability-lifetime"},
		{"intragroup unknown", []string{"--store", "127.0.0.1:1", "--intragroup", "most"}, "--intragroup"},
		{"intergroup alias typo", []string{"--store", "127.0.0.1:1", "--intergroup", "any-groups"}, "--intergroup"},
		{"store group", []string{"--store", "127.0.0.1:1:0:0", "--store-group", "0:3"}, "group 0 does not have enough stores specified"},
		{"store name without deployment", []string{"--store-name", "G1S1"}, "--store-name needs --deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--source", "s", "--timeout", "1s"}, tt.args...)
			if code := run(args, strings.NewReader(""), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("umpub %v: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut.String(), tt.want)
			}
		})
	}
}

// --timeout bounds what is not the rate's own schedule: at a fixed --rate
// the sending time is added, so a minute of messages at 200/s does not
// fail at the default minute.
func TestDeadlineAddsTheRatesSchedule(t *testing.T) {
	tests := []struct {
		name string
		o    options
		want time.Duration
	}{
		{"flat out", options{timeout: time.Minute, count: 12000, sources: 1}, time.Minute},
		{"200 msgs/s, 12,000", options{timeout: time.Minute, count: 12000, sources: 1, rate: 200}, 2 * time.Minute},
		{"1,000 msgs/s over 10 sources of 500", options{timeout: 30 * time.Second, count: 500, sources: 10, rate: 1000}, 35 * time.Second},
		{"stdin", options{timeout: time.Minute, count: 1, sources: 1, rate: 10, stdin: true}, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.deadline(); got != tt.want {
				t.Errorf("deadline() = %v, want %v", got, tt.want)
			}
		})
	}
}
