package main

import (
	"path/filepath"
	"strings"
	"testing"

	"umstore/placement"
)

// Restarting `umstored dev` on its own data directory must work; a
// different base port must be refused with the port to use.
func TestCheckDevDeployment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", 14000), false); err != nil {
		t.Fatalf("no file yet: %v", err)
	}
	if err := placement.Dev("127.0.0.1", 14000).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := checkDevDeployment(path, placement.Dev("127.0.0.1", 14000), true); err != nil {
		t.Fatalf("same deployment again: %v", err)
	}
	// A dev directory from before member secrets is reused; dev then
	// writes the secret beside it.
	withSecret := placement.Dev("127.0.0.1", 14000)
	withSecret.Security = &placement.Security{MemberSecretFile: "deployment.member-secret"}
	if err := checkDevDeployment(path, withSecret, false); err != nil {
		t.Fatalf("the same deployment with a member secret: %v", err)
	}
	err := checkDevDeployment(path, placement.Dev("127.0.0.1", 15000), true)
	if err == nil || !strings.Contains(err.Error(), "--base-port 14000") {
		t.Fatalf("another base port: %v, want a refusal naming 14000", err)
	}
}
