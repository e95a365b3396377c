package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"umstore/internal/testmain"
	"umstore/placement"
)

// `umstored dev --client-base-port` puts the client ports there, not at
// base+1000: the deployment file says so and umpub publishes through them.
func TestDevClientBasePort(t *testing.T) {
	testmain.Slow(t)
	bin := binaries(t)
	data := t.TempDir()
	client := freeBase(t, []string{"127.0.0.1"}, []int{11, 12, 13, 21, 22, 23})
	startDev(t, bin, data, "--client-base-port", fmt.Sprint(client))
	deploy := filepath.Join(data, "deployment.yaml")
	d, err := placement.Load(deploy)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range d.Stores() {
		if want := client + ref.Store.RaftPort%10 + 10*ref.Group; ref.Store.ClientPort != want {
			t.Fatalf("%s: client port %d, want %d (--client-base-port %d)", ref.Store.Name, ref.Store.ClientPort, want, client)
		}
	}
	out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "ports", "--count", "10", "--json")
	var sum pubSummary
	if err := json.Unmarshal([]byte(lastLine(out)), &sum); err != nil || code != 0 || sum.Stable != 10 {
		t.Fatalf("umpub through the client ports at %d: exit %d, %+v (%v)\n%s", client, code, sum, err, errOut)
	}
}
