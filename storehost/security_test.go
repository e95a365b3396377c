package storehost

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"umstore/internal/memberauth"
	"umstore/placement"
)

// syncBuffer collects logs written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeDeployment writes d to dir/deployment.yaml, with a member secret
// beside it if withSecret, and loads it back as umstored run would.
func writeDeployment(t *testing.T, d *placement.Deployment, dir string, withSecret bool) *placement.Deployment {
	t.Helper()
	path := filepath.Join(dir, "deployment.yaml")
	if withSecret {
		if err := os.WriteFile(filepath.Join(dir, "deployment.member-secret"), memberauth.NewSecret(), 0o600); err != nil {
			t.Fatal(err)
		}
		d.Security = &placement.Security{MemberSecretFile: "deployment.member-secret"}
	}
	if err := d.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := placement.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// The stores get the member secret the deployment names, from the file
// beside it; a missing or damaged secret file stops the host with a
// message naming the file and the key.
func TestConfigsLoadTheMemberSecret(t *testing.T) {
	dir := t.TempDir()
	d := writeDeployment(t, placement.Dev("127.0.0.1", 14000), dir, true)
	cfgs, err := Configs(d, "A", t.TempDir(), BaseConfig(placement.DefaultPolicy()))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "deployment.member-secret"))
	want, _ := hex.DecodeString(strings.TrimSpace(string(raw)))
	for _, c := range cfgs {
		if !bytes.Equal(c.Security.MemberSecret, want) {
			t.Errorf("%s: member secret %x, want the file's %x", c.Name, c.Security.MemberSecret, want)
		}
	}
	for name, content := range map[string]string{"missing": "", "not hex": "zz\n"} {
		p := filepath.Join(dir, "deployment.member-secret")
		os.Remove(p)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o600)
		}
		_, err := Configs(d, "A", t.TempDir(), BaseConfig(placement.DefaultPolicy()))
		if err == nil || !strings.Contains(err.Error(), "security.member-secret-file") {
			t.Errorf("%s secret file: %v, want an error naming security.member-secret-file", name, err)
		}
	}
}

// A deployment file written before member secrets existed still runs,
// with a warning at start that names the file and the command that adds
// a secret; one with a secret runs without it, its members proving
// themselves to each other.
func TestDeploymentWithoutMemberSecretRunsWithAWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six stores, twice")
	}
	for _, withSecret := range []bool{false, true} {
		dir := t.TempDir()
		d := writeDeployment(t, devOnFreePorts(t), dir, withSecret)
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		var hs Hosts
		for _, h := range d.Hosts {
			host, err := Start(context.Background(), d, h.Name, filepath.Join(dir, h.Name), BaseConfig(placement.DefaultPolicy()), log)
			if err != nil {
				hs.Stop()
				t.Fatal(err)
			}
			hs = append(hs, host)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := hs.WaitLeaders(ctx, log)
		cancel()
		hs.Stop()
		if err != nil {
			t.Fatalf("secret %v: no leaders: %v\n%s", withSecret, err, logs.String())
		}
		warned := strings.Count(logs.String(), "UNPROTECTED RAFT PORTS")
		command := "umstored plan --add-member-secret --deployment " + d.File()
		switch {
		case !withSecret && (warned != 2 || !strings.Contains(logs.String(), command)):
			t.Errorf("without a secret: %d warnings (want one per host) naming %q:\n%s", warned, command, logs.String())
		case withSecret && warned != 0:
			t.Errorf("with a secret: warned anyway:\n%s", logs.String())
		case withSecret && strings.Contains(logs.String(), "refused a raft connection"):
			t.Errorf("with a secret: members refused each other:\n%s", logs.String())
		}
	}
}
