package devstores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"

	"umstore/internal/atomicfile"
	"umstore/internal/cli"
	"umstore/internal/memberauth"
	"umstore/placement"
	"umstore/storehost"
)

// Stores is a running deployment of two groups of three stores.
type Stores struct {
	dir   string
	path  string
	d     *placement.Deployment
	hosts storehost.Hosts
}

// attempts bounds the tries at finding free ports.
const attempts = 8

// Start writes a deployment (with its member secret) to a new temporary
// directory, starts every store of it, and waits until every group has a
// leader. Stop stops them and removes the directory.
func Start(ctx context.Context) (*Stores, error) {
	var lastErr error
	for range attempts {
		s, err := start(ctx, freeBase())
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("devstores: start the stores: %w", lastErr)
}

func start(ctx context.Context, base int) (*Stores, error) {
	dir, err := os.MkdirTemp("", "umstore-devstores-")
	if err != nil {
		return nil, err
	}
	s := &Stores{dir: dir, path: filepath.Join(dir, "deployment.yaml")}
	d := placement.Dev("127.0.0.1", base)
	secret := placement.MemberSecretFileFor(s.path)
	if err := atomicfile.Write(filepath.Join(dir, secret), memberauth.NewSecret(), 0o600); err != nil {
		s.Stop()
		return nil, err
	}
	d.Security = &placement.Security{MemberSecretFile: secret}
	if err := d.WriteFile(s.path); err != nil {
		s.Stop()
		return nil, err
	}
	if s.d, err = placement.Load(s.path); err != nil {
		s.Stop()
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, h := range s.d.Hosts {
		host, err := storehost.Start(ctx, s.d, h.Name, filepath.Join(dir, h.Name), storehost.BaseConfig(s.d.Policy), quiet)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.hosts = append(s.hosts, host)
		// A host runs without a store that could not start (its port
		// taken since freeBase looked, say); this deployment is
		// throwaway, so try another rather than wait for a group whose
		// bootstrapper is missing.
		if err := host.StartErr(); err != nil {
			s.Stop()
			return nil, err
		}
	}
	if err := s.hosts.WaitLeaders(ctx, quiet); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// The bases freeBase picks from: the highest port a base plans is
// base+1023, so the range stays below the ports other packages' tests pick
// (19000 and up: internal/clustertest, e2e, umstored's dev tests) and far
// below the ephemeral range (32768 and up), which outgoing connections take.
const lowestBase, bases = 10000, 80

// freeBase picks a base port whose twelve raft and client ports are free
// now (another process may still take one before the stores do; Start
// then tries again elsewhere).
func freeBase() int {
	for {
		base := lowestBase + 100*rand.IntN(bases)
		if portsFree(base) {
			return base
		}
	}
}

func portsFree(base int) bool {
	d := placement.Dev("127.0.0.1", base)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, r := range d.Stores() {
		for _, addr := range []string{r.RaftAddr(), r.ClientAddr()} {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return false
			}
			lns = append(lns, ln)
		}
	}
	return true
}

// Groups lists, per group, the client addresses of its stores: what
// publisher.Config.Groups and receiver.Config.Groups take.
func (s *Stores) Groups() [][]string { return cli.DeploymentGroups(s.d) }

// DeploymentFile is the deployment file the stores run from, for the
// commands (umpub --deployment, umrcv --deployment).
func (s *Stores) DeploymentFile() string { return s.path }

// Stop stops every store and removes the directory.
func (s *Stores) Stop() {
	s.hosts.Stop()
	s.hosts = nil
	if err := os.RemoveAll(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "devstores: remove", s.dir+":", err)
	}
}
