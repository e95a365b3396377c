package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"umstore/internal/cli"
	"umstore/placement"
)

// Where the hosts are, and which deployment file says so.
//
// A schedule starts with one deployment file, the one `umstored plan`
// wrote. Each replace-host fault writes another (`umstored plan
// --deployment LATEST --host NAME=ADDRESS`, as an operator would with the
// current file) and starts the replaced host from it at its new address.
// Nothing else gets the new file on its own: the other host keeps running,
// and restarting, with the file it had, and so do the publishers and
// receivers, which must find the moved stores through the stores'
// redirects. The product promises that only as long as one of the stores a
// client lists still answers (docs/operations.md, "Replacing a host", step
// 6), so a client whose file would list no host where it is after a
// replacement is handed the new file first (handOut in kind_replace.go),
// as the operator is told to do.

// deployFile is one deployment file of a schedule: where it is, where it
// places each host, and each group's client addresses.
type deployFile struct {
	Path   string
	Addrs  map[string]string // host name -> address
	Groups [][]string
}

func newDeployFile(path string, d *placement.Deployment) *deployFile {
	f := &deployFile{Path: path, Addrs: map[string]string{}, Groups: cli.DeploymentGroups(d)}
	for _, h := range d.Hosts {
		f.Addrs[h.Name] = h.Address
	}
	return f
}

// placesAny reports whether the file places some host where now says it
// is: a client with the file then lists stores that answer.
func (f *deployFile) placesAny(now map[string]string) bool {
	for name, addr := range f.Addrs {
		if now[name] == addr {
			return true
		}
	}
	return false
}

// replacementAddrs are the loopback addresses a replaced host may move to:
// 127.0.0.5 and up (127.0.0.2 and .3 are the hosts' first addresses,
// strangerAddr, 127.0.0.4, the stranger's, which must never be a member's).
func replacementAddrs() []string {
	var out []string
	for i := 5; i <= 20; i++ {
		out = append(out, fmt.Sprintf("127.0.0.%d", i))
	}
	return out
}

// nextAddress picks where host moves to: the first replacement address no
// host is at now (so not host's own either) that usable accepts (its ports
// are free). A host replaced again moves back to an address it left when
// no host is there (A: .5, .6, .5, ... while B stays put), so a store's
// group sees an address it knew come back as that store; an address one
// host left may be taken by the other.
func nextAddress(now map[string]string, host string, usable func(addr string) bool) (string, error) {
	held := make([]string, 0, len(now))
	for _, a := range now {
		held = append(held, a)
	}
	for _, a := range replacementAddrs() {
		if a == strangerAddr || slices.Contains(held, a) {
			continue
		}
		if usable(a) {
			return a, nil
		}
	}
	return "", fmt.Errorf("no free replacement address for host %s (tried %s)", host, strings.Join(replacementAddrs(), ", "))
}

// addrsFree reports whether every port the deployment uses on a host is
// free at addr: its stores' raft and client ports and the admin port.
func addrsFree(addr string, ports []int) bool {
	for _, p := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// hostAddrsNow maps each host to where it is now.
func (c *cluster) hostAddrsNow() map[string]string {
	out := map[string]string{}
	for _, h := range c.hosts {
		out[h.name] = h.address()
	}
	return out
}

// file returns the schedule's deployment file at path, nil if it has none.
func (c *cluster) file(path string) *deployFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.files {
		if f.Path == path {
			return f
		}
	}
	return nil
}

// latestFile is the newest deployment file: the one that places every
// host where it is.
func (c *cluster) latestFile() *deployFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files[len(c.files)-1]
}

// statusFile is the oldest deployment file that still places some host
// where it is: what `umstored status` is run with, so that the operator's
// view is checked with the file the surviving host runs with for as long
// as the product promises it works (it finds the moved stores through
// their groups).
func (c *cluster) statusFile() string {
	now := c.hostAddrsNow()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.files {
		if f.placesAny(now) {
			return f.Path
		}
	}
	return c.files[len(c.files)-1].Path
}

// readdress writes the deployment file of host moved to addr: `umstored
// plan --deployment LATEST --host NAME=ADDRESS` into the schedule's
// directory, beside the planned file (so the member secret file it names,
// relative to its directory, is the same one). It returns the new file.
func (c *cluster) readdress(ctx context.Context, host, addr string) (*deployFile, error) {
	from := c.latestFile()
	c.mu.Lock()
	path := filepath.Join(c.dir, fmt.Sprintf("deployment-%d-%s.yaml", len(c.files), host))
	c.mu.Unlock()
	out, errOut, err := runTool(ctx, filepath.Join(c.bin, "umstored"), "plan", "--deployment", from.Path, "--host", host+"="+addr, "--out", path)
	if err != nil {
		return nil, fmt.Errorf("umstored plan --deployment %s --host %s=%s: %w\n%s%s", filepath.Base(from.Path), host, addr, err, out, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("host %s: %s -> %s", host, from.Addrs[host], addr)) {
		return nil, fmt.Errorf("umstored plan --deployment did not say host %s moves from %s to %s:\n%s", host, from.Addrs[host], addr, out)
	}
	d, err := placement.Load(path)
	if err != nil {
		return nil, fmt.Errorf("read the edited deployment: %w", err)
	}
	f := newDeployFile(path, d)
	for name, a := range from.Addrs {
		want := a
		if name == host {
			want = addr
		}
		if f.Addrs[name] != want {
			return nil, fmt.Errorf("the edited deployment %s places host %s at %s, want %s", filepath.Base(path), name, f.Addrs[name], want)
		}
	}
	if d.Security == nil || d.Security.MemberSecretFile == "" {
		return nil, errors.New("the edited deployment names no member secret file: the moved stores could not prove they are members")
	}
	c.mu.Lock()
	c.files = append(c.files, f)
	c.mu.Unlock()
	return f, nil
}

// hostPorts lists every port a host of the deployment listens on: the
// stores' raft and client ports (of both hosts: the planner gives each
// store its own) and the admin port.
func (c *cluster) hostPorts() []int {
	return append(slices.Clone(c.ports), c.base+2000)
}
