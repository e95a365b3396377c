package placement

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// This file holds what the scenario files of the top-level testdata/planner
// and testdata/restart share: reading a planner request or a hand-adjusted
// deployment from a directive's arguments, and naming a refusal.
//
// Arguments understood by every directive that describes a deployment:
//
//	hosts=A,B             host names, each NAME or NAME=ADDRESS; a host
//	                      without an address gets 10.0.0.<position>
//	groups=N              store groups (0 or absent: the planner's default)
//	stores-per-group=N    stores in each group (0 or absent: the default)
//	base-port=N           start of the port numbering (0 or absent: default)
//	name=NAME             the deployment's name (absent: the default)
//
// and, where a layout the planner would not make is wanted:
//
//	move=(G2S2=A,...)     put a store on another host after the layout
//	idle-hosts=(C,...)    add hosts that run no stores
//	intergroup=BEHAVIOUR  the deployment's intergroup stability behaviour

// scenarioRequest reads a planner request from d's arguments.
func scenarioRequest(t *testing.T, d *datadriven.TestData) Request {
	t.Helper()
	var req Request
	d.MaybeScanArgs(t, "name", &req.Name)
	d.MaybeScanArgs(t, "groups", &req.Groups)
	d.MaybeScanArgs(t, "stores-per-group", &req.StoresPerGroup)
	d.MaybeScanArgs(t, "base-port", &req.BasePort)
	req.Hosts = scenarioHosts(t, d, "hosts")
	return req
}

// scenarioHosts reads a list of NAME or NAME=ADDRESS, given as one
// comma-separated value or as a parenthesised list.
func scenarioHosts(t *testing.T, d *datadriven.TestData, key string) []Host {
	t.Helper()
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	var out []Host
	for _, v := range arg.Vals {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			name, addr, found := strings.Cut(item, "=")
			if !found {
				addr = fmt.Sprintf("10.0.0.%d", len(out)+1)
			}
			out = append(out, Host{Name: name, Address: addr})
		}
	}
	return out
}

// scenarioList reads a list argument given as one comma-separated value or
// as a parenthesised list; absent, it is nil.
func scenarioList(d *datadriven.TestData, key string) []string {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range arg.Vals {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// adjust applies the move, idle-hosts and intergroup arguments to a
// deployment, then fills its defaults as Parse would.
func adjust(t *testing.T, d *datadriven.TestData, dep *Deployment) {
	t.Helper()
	for _, m := range scenarioList(d, "move") {
		store, host, ok := strings.Cut(m, "=")
		if !ok {
			d.Fatalf(t, "move %q: want STORE=HOST", m)
		}
		moved := false
		for gi := range dep.Groups {
			for si := range dep.Groups[gi].Stores {
				if dep.Groups[gi].Stores[si].Name == store {
					dep.Groups[gi].Stores[si].Host = host
					moved = true
				}
			}
		}
		if !moved {
			d.Fatalf(t, "move %q: no store %s", m, store)
		}
	}
	for _, h := range scenarioList(d, "idle-hosts") {
		dep.Hosts = append(dep.Hosts, Host{Name: h, Address: fmt.Sprintf("10.0.0.%d", len(dep.Hosts)+1)})
	}
	d.MaybeScanArgs(t, "intergroup", &dep.Stability.Intergroup)
	dep.FillDefaults()
}

// sentinels names the errors a refusal may match, for the scenario output.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrInvalidRequest", ErrInvalidRequest},
	{"ErrTooFewHosts", ErrTooFewHosts},
	{"ErrTooFewStores", ErrTooFewStores},
	{"ErrEvenGroupSize", ErrEvenGroupSize},
	{"ErrNoSurvivingGroup", ErrNoSurvivingGroup},
	{"ErrPortRange", ErrPortRange},
	{"ErrNoStoreWithState", ErrNoStoreWithState},
}

// sentinelNames lists the sentinels err matches with errors.Is, or "none".
func sentinelNames(err error) string {
	var names []string
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
