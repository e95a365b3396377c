package e2e_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// twoHosts is a planned deployment for host A on 127.0.0.2 and host B on
// 127.0.0.3, each run by its own `umstored run` process.
type twoHosts struct {
	bin, dir, deploy string
	base             int
	a, b             *host
}

// planTwoHosts plans the deployment in a fresh directory; the hosts are not
// started, and are stopped when the test ends.
func planTwoHosts(t *testing.T, bin string) *twoHosts {
	t.Helper()
	return planTwoHostsBeside(t, bin, nil, "host")
}

// planTwoHostsBeside is planTwoHosts at ports other than those of other
// (nil: any), naming the hosts' logs "<what> A" and "<what> B".
func planTwoHostsBeside(t *testing.T, bin string, other *twoHosts, what string) *twoHosts {
	t.Helper()
	d := &twoHosts{bin: bin, dir: t.TempDir(), base: basePortOn(t, "127.0.0.2", "127.0.0.3")}
	for other != nil && d.base == other.base {
		d.base = basePortOn(t, "127.0.0.2", "127.0.0.3")
	}
	d.deploy = filepath.Join(d.dir, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umstored", "plan", "--host", "A=127.0.0.2", "--host", "B=127.0.0.3", "--base-port", fmt.Sprint(d.base), "--out", d.deploy); code != 0 {
		t.Fatalf("plan: %d\n%s\n%s", code, out, errOut)
	}
	d.a = d.host(t, "A", "127.0.0.2", d.base+2000)
	d.b = d.host(t, "B", "127.0.0.3", d.base+2000)
	t.Cleanup(func() {
		d.a.stop()
		d.b.stop()
		if t.Failed() {
			t.Logf("%s A log:\n%s", what, tail(d.a.stderr, 40))
			t.Logf("%s B log:\n%s", what, tail(d.b.stderr, 40))
		}
	})
	return d
}

// host returns another process for one of the deployment's hosts (e.g. a
// standby), on its own admin port.
func (d *twoHosts) host(t *testing.T, name, addr string, adminPort int, extra ...string) *host {
	return &host{t: t, bin: d.bin, name: name, addr: addr, dataDir: filepath.Join(d.dir, name), admin: fmt.Sprintf("%s:%d", addr, adminPort), deploy: d.deploy, extra: extra}
}

// startAll starts both hosts and waits until all six stores are up.
func (d *twoHosts) startAll(t *testing.T) {
	t.Helper()
	d.a.start()
	d.b.start()
	d.waitAllUp(t, "all six stores are up")
}

func (d *twoHosts) waitAllUp(t *testing.T, what string) {
	t.Helper()
	waitFor(t, 60*time.Second, what, func() bool {
		g, _, _ := deploymentStatus(t, d.bin, d.deploy)
		return allUp(g)
	})
}
