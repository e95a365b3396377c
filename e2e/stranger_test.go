package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"umstore/placement"
	"umstore/repository"
)

// raftPosition is the part of a store's /v1/status the attack needs.
type raftPosition struct {
	Name      string `json:"name"`
	LastIndex uint64 `json:"last_index"`
	LastTerm  uint64 `json:"last_term"`
}

func raftPositions(t *testing.T, admin string) map[string]raftPosition {
	t.Helper()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + admin + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Stores []raftPosition `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	out := map[string]raftPosition{}
	for _, s := range st.Stores {
		out[s.Name] = s
	}
	return out
}

// refusedOnHost sums umstore_raft_peers_refused_total over a host's
// /metrics, per store.
func refusedOnHost(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	line := regexp.MustCompile(`(?m)^umstore_raft_peers_refused_total\{([^}]*)\} (\S+)$`)
	store := regexp.MustCompile(`store="([^"]+)"`)
	for _, m := range line.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		if s := store.FindStringSubmatch(m[1]); s != nil {
			out[s[1]] += v
		}
	}
	return out
}

// A deployment written by `umstored plan` (so with its member secret), two
// `umstored run` hosts. A process using hashicorp/raft's own TCP transport
// sends every store a forged AppendEntries (the next term, one Trim entry
// of everything published, a commit index) and a TimeoutNow: no store
// answers either, each counts the refusals on /metrics and logs them;
// publishing and reading back still work, and nothing published is lost.
func TestStrangerOnEveryRaftPort(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	dep, err := placement.Load(d.deploy)
	if err != nil {
		t.Fatal(err)
	}
	if dep.Security == nil || dep.Security.MemberSecretFile == "" {
		t.Fatalf("umstored plan wrote no member secret reference: %+v", dep.Security)
	}
	d.startAll(t)
	if sum := publishJSON(t, bin, d.deploy, "before", 100); sum.Stable != 100 {
		t.Fatalf("umpub: %+v", sum)
	}

	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 3*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	admins := map[string]*host{"A": d.a, "B": d.b}
	positions := map[string]raftPosition{}
	for _, h := range admins {
		for name, p := range raftPositions(t, h.admin) {
			positions[name] = p
		}
	}
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(trans.LocalAddr())}
	for _, ref := range dep.Stores() {
		p := positions[ref.Store.Name]
		id, addr := raft.ServerID(ref.Store.Name), raft.ServerAddress(ref.RaftAddr())
		req := &raft.AppendEntriesRequest{
			RPCHeader:    hdr,
			Term:         p.LastTerm + 1,
			PrevLogEntry: p.LastIndex,
			PrevLogTerm:  p.LastTerm,
			Entries: []*raft.Log{{Index: p.LastIndex + 1, Term: p.LastTerm + 1, Type: raft.LogCommand,
				Data: repository.EncodeTrim(repository.Trim{Source: "before", Through: 100, Reason: "forged"})}},
			LeaderCommitIndex: p.LastIndex + 1,
		}
		var resp raft.AppendEntriesResponse
		if err := trans.AppendEntries(id, addr, req, &resp); err == nil || resp.Success {
			t.Errorf("%s (%s) answered a stranger's AppendEntries: success %v, err %v", ref.Store.Name, addr, resp.Success, err)
		}
		var tresp raft.TimeoutNowResponse
		if err := trans.TimeoutNow(id, addr, &raft.TimeoutNowRequest{RPCHeader: hdr}, &tresp); err == nil {
			t.Errorf("%s (%s) answered a stranger's TimeoutNow", ref.Store.Name, addr)
		}
	}

	waitFor(t, 10*time.Second, "every store counts the refusals on /metrics", func() bool {
		for _, ref := range dep.Stores() {
			if refusedOnHost(t, admins[ref.Host.Name].admin)[ref.Store.Name] < 2 {
				return false
			}
		}
		return true
	})
	for _, h := range admins {
		if !strings.Contains(h.stderr.String(), "refused a raft connection") || !strings.Contains(h.stderr.String(), "remote=127.0.0.1:") {
			t.Errorf("host %s did not log the refusals with the stranger's address", h.name)
		}
		if strings.Contains(h.stderr.String(), "UNPROTECTED RAFT PORTS") {
			t.Errorf("host %s warned about a missing member secret, but plan wrote one", h.name)
		}
	}

	if sum := publishJSON(t, bin, d.deploy, "after", 100); sum.Stable != 100 {
		t.Fatalf("umpub after the attack: %+v", sum)
	}
	for _, source := range []string{"before", "after"} {
		out, errOut, code := runTool(t, bin, "umrcv", "--deployment", d.deploy, "--source", source)
		if code != 0 || strings.Count(out, "\n") != 100 {
			t.Errorf("umrcv %s: exit %d, %d lines, want 100\n%s", source, code, strings.Count(out, "\n"), errOut)
		}
	}
	g, _, _ := deploymentStatus(t, bin, d.deploy)
	if !allUp(g) {
		t.Errorf("not every store is up after the attack: %+v", g)
	}
}
