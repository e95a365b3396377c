package main

import (
	"bytes"
	"strings"
	"testing"
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
