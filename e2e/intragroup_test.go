package e2e_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"umstore/internal/testmain"
	"umstore/placement"
	"umstore/wire"
)

// umpub --intragroup all against `umstored dev`: stable end to end with
// every store up, each group saying it applies all. With one store of
// group 1 stopped, group 1 does not complete the registration (as UM):
// under intergroup all umpub fails at once naming the missing store,
// under any group 2 makes the messages stable, and quorum does not notice
// the missing store.
func TestUMPubIntragroupAll(t *testing.T) {
	testmain.Slow(t)
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deploy := filepath.Join(data, "deployment.yaml")

	type summary struct {
		pubSummary
		GroupsConfirmed []uint64 `json:"groups_confirmed"`
		GroupsAnswered  []int    `json:"groups_answered"`
		Intragroup      []string `json:"groups_intragroup"`
	}
	umpub := func(source string, count string, extra ...string) (summary, int, string) {
		t.Helper()
		args := append([]string{"umpub", "--deployment", deploy, "--source", source, "--count", count, "--json"}, extra...)
		out, errOut, code := runTool(t, bin, args...)
		var sum summary
		if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil {
			t.Fatalf("umpub %v: exit %d, no summary (%v)\n%s\n%s", extra, code, err, out, errOut)
		}
		return sum, code, errOut
	}

	sum, code, errOut := umpub("all", "300", "--intragroup", "all")
	if code != 0 || sum.Stable != 300 || sum.LastSeq != 300 || !slices.Equal(sum.Intragroup, []string{"all", "all"}) {
		t.Fatalf("umpub --intragroup all: exit %d, %+v\n%s", code, sum, errOut)
	}

	// Stop one store of group 1 (a store stops alone at a Shutdown; the
	// daemon keeps the others).
	d, err := placement.Load(deploy)
	if err != nil {
		t.Fatal(err)
	}
	victim := d.Members(1)[2]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := (&wire.Dialer{Client: "e2e"}).Dial(ctx, victim.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Send(&wire.Shutdown{ReqID: 1}); err != nil {
		t.Fatal(err)
	}
	if m, err := conn.Read(); err != nil {
		t.Fatalf("Shutdown %s: %v", victim.Store.Name, err)
	} else if _, ok := m.(*wire.OK); !ok {
		t.Fatalf("Shutdown %s answered %#v", victim.Store.Name, m)
	}
	conn.Close()
	for {
		c, _, err := (&wire.Dialer{Client: "e2e", Timeout: time.Second}).Dial(ctx, victim.ClientAddr())
		if err != nil {
			break
		}
		c.Close()
		if ctx.Err() != nil {
			t.Fatalf("%s still answers after its Shutdown", victim.Store.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Group 1 does not complete the registration (UM does not either):
	// under intergroup all the refusal ends umpub at once, naming the
	// missing store and what to do.
	refusal := func(what, errOut string) {
		t.Helper()
		for _, want := range []string{"does not complete the registration", victim.Store.Name + " (not heard from for", "start it", "all-active or quorum"} {
			if !strings.Contains(errOut, want) {
				t.Fatalf("%s: umpub does not say %q:\n%s", what, want, errOut)
			}
		}
		if strings.Contains(errOut, "may have been reused") {
			t.Fatalf("%s: umpub says its messages may have been reused:\n%s", what, errOut)
		}
	}
	// The leader counts a member as running until it has been silent for
	// three heartbeat timeouts (1.5 s).
	time.Sleep(2 * time.Second)
	start := time.Now()
	sum, code, errOut = umpub("strict", "10", "--intragroup", "all", "--intergroup", "all", "--timeout", "20s")
	if took := time.Since(start); code != 1 || sum.Stable != 0 || sum.Sent != 0 || took > 3*time.Second {
		t.Fatalf("intragroup all, intergroup all, a store of group 1 down: exit %d after %v, %+v; want exit 1 at once, nothing sent\n%s", code, took.Round(time.Millisecond), sum, errOut)
	}
	refusal("intergroup all", errOut)
	// Under any, group 2 alone registers and makes the messages stable;
	// group 1 stays unregistered (it confirms nothing).
	sum, code, errOut = umpub("any", "10", "--intragroup", "all", "--log-level", "info")
	if code != 0 || sum.Stable != 10 || sum.GroupsConfirmed[0] != 0 || !slices.Equal(sum.GroupsAnswered, []int{2}) {
		t.Fatalf("intragroup all, intergroup any, a store of group 1 down: exit %d, %+v; want stable through group 2 alone, group 1 unregistered\n%s", code, sum, errOut)
	}
	refusal("intergroup any", errOut)
	sum, code, errOut = umpub("quorum", "10", "--intergroup", "all")
	if code != 0 || sum.Stable != 10 || !slices.Equal(sum.Intragroup, []string{"quorum", "quorum"}) {
		t.Fatalf("intragroup quorum, intergroup all, a store of group 1 down: exit %d, %+v\n%s", code, sum, errOut)
	}
}
