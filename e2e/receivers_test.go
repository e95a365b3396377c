package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// consumedIn returns the position `umstored status --json` shows for
// receiver on source in each group (by index), and whether every group
// with a leader shows one.
func consumedIn(t *testing.T, bin, deploy, source, receiver string) map[int]uint64 {
	t.Helper()
	out, errOut, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy, "--json")
	var st struct {
		Groups []struct {
			Index   int `json:"index"`
			Sources []struct {
				Name      string `json:"name"`
				Receivers []struct {
					Name     string `json:"name"`
					Consumed uint64 `json:"consumed"`
				} `json:"receivers"`
			} `json:"sources"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("umstored status --json: %v\n%s\n%s", err, out, errOut)
	}
	got := map[int]uint64{}
	for _, g := range st.Groups {
		for _, s := range g.Sources {
			for _, r := range s.Receivers {
				if s.Name == source && r.Name == receiver {
					got[g.Index] = r.Consumed
				}
			}
		}
	}
	return got
}

// seqsOf reads the sequence numbers of umrcv's "SEQ PAYLOAD" lines.
func seqsOf(t *testing.T, out string) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f, _, _ := strings.Cut(l, " ")
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("umrcv line %q: %v", l, err)
		}
		seqs = append(seqs, n)
	}
	return seqs
}

// checkRun fails unless seqs are exactly from..to.
func checkRun(t *testing.T, what string, seqs []uint64, from, to uint64) {
	t.Helper()
	if uint64(len(seqs)) != to-from+1 || (len(seqs) > 0 && (seqs[0] != from || seqs[len(seqs)-1] != to)) {
		first, last := uint64(0), uint64(0)
		if len(seqs) > 0 {
			first, last = seqs[0], seqs[len(seqs)-1]
		}
		t.Fatalf("%s printed %d lines, %d..%d; want %d..%d", what, len(seqs), first, last, from, to)
	}
	for i, s := range seqs {
		if s != from+uint64(i) {
			t.Fatalf("%s printed %d at line %d, want %d", what, s, i+1, from+uint64(i))
		}
	}
}

// Durable receivers with the binaries: `umrcv --name app1 --to 1000`, then
// `umrcv --name app1` prints 1001 to the end, and `umstored status --json`
// shows app1 where it stopped each time.
func TestDurableReceiverResumes(t *testing.T) {
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data)
	deploy := filepath.Join(data, "deployment.yaml")
	if out, errOut, code := runTool(t, bin, "umpub", "--deployment", deploy, "--source", "orders", "--count", "3000", "--json"); code != 0 {
		t.Fatalf("umpub: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "orders", "--name", "app1", "--to", "1000")
	if code != 0 {
		t.Fatalf("umrcv --name app1 --to 1000: exit %d: %s", code, errOut)
	}
	checkRun(t, "umrcv --name app1 --to 1000", seqsOf(t, out), 1, 1000)
	if got := consumedIn(t, bin, deploy, "orders", "app1"); got[1] != 1000 || got[2] != 1000 {
		t.Fatalf("umstored status --json shows app1 at %v, want 1000 in both groups", got)
	}
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "orders", "--name", "app1")
	if code != 0 {
		t.Fatalf("umrcv --name app1: exit %d: %s", code, errOut)
	}
	checkRun(t, "umrcv --name app1 (again)", seqsOf(t, out), 1001, 3000)
	if got := consumedIn(t, bin, deploy, "orders", "app1"); got[1] != 3000 || got[2] != 3000 {
		t.Fatalf("umstored status --json shows app1 at %v, want 3000 in both groups", got)
	}
	// Nothing new: a third run prints nothing and succeeds.
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "orders", "--name", "app1")
	if code != 0 || out != "" {
		t.Fatalf("a third run: exit %d, printed %q (%s); want nothing", code, out, errOut)
	}
	// Without a name nothing is recorded and it starts at the oldest.
	out, _, _ = runTool(t, bin, "umrcv", "--deployment", deploy, "--source", "orders", "--to", "3")
	checkRun(t, "umrcv without a name", seqsOf(t, out), 1, 3)
	text, _, _ := runTool(t, bin, "umstored", "status", "--deployment", deploy)
	if !strings.Contains(text, "RECEIVER") || !strings.Contains(text, "app1") {
		t.Fatalf("umstored status does not list the receiver:\n%s", text)
	}
}

// follower is a running `umrcv --follow` whose printed sequence numbers are
// collected as they come.
type follower struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	seqs []uint64
	done chan struct{}
	err  strings.Builder
}

func startFollower(t *testing.T, bin string, args ...string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(filepath.Join(bin, "umrcv"), args...), done: make(chan struct{})}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	f.cmd.Stderr = &f.err
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s, _, _ := strings.Cut(sc.Text(), " ")
			if n, err := strconv.ParseUint(s, 10, 64); err == nil {
				f.mu.Lock()
				f.seqs = append(f.seqs, n)
				f.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		f.cmd.Process.Kill()
		f.cmd.Wait()
	})
	return f
}

func (f *follower) printed() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.seqs...)
}

func (f *follower) last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seqs) == 0 {
		return 0
	}
	return f.seqs[len(f.seqs)-1]
}

// A durable follower killed with kill -9 mid-stream and started again
// continues with no gap, and prints again only what it printed but had not
// yet recorded: at most what it printed in its last acknowledgement
// interval (100ms) and the time the last acknowledgement took to commit.
// At 500 messages/s that is some 50 to 100 messages; the test allows one
// second's worth.
func TestDurableFollowerSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	data := t.TempDir()
	startDev(t, bin, data, "--receiver-activity-timeout", "3s")
	deploy := filepath.Join(data, "deployment.yaml")
	const total, rate = 6000, 500
	pub := exec.Command(filepath.Join(bin, "umpub"), "--deployment", deploy, "--source", "stream", "--count", fmt.Sprint(total), "--rate", fmt.Sprint(rate), "--timeout", "2m")
	var pubErr strings.Builder
	pub.Stderr = &pubErr
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { pub.Process.Kill(); pub.Wait() }()

	args := []string{"--deployment", deploy, "--source", "stream", "--name", "app2", "--follow"}
	first := startFollower(t, bin, args...)
	waitFor(t, 60*time.Second, "the follower prints 1500 messages", func() bool { return first.last() >= 1500 })
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.cmd.Wait()
	<-first.done
	before := first.printed()
	checkRun(t, "the first follower", before, 1, before[len(before)-1])
	killedAt := before[len(before)-1]

	second := startFollower(t, bin, args...)
	waitFor(t, 90*time.Second, "the restarted follower reaches the end", func() bool { return second.last() >= total })
	after := second.printed()
	resumed := after[0]
	checkRun(t, "the restarted follower", after, resumed, total)
	if resumed > killedAt+1 {
		t.Fatalf("gap: killed after printing %d, the restart began at %d", killedAt, resumed)
	}
	redelivered := killedAt + 1 - resumed
	t.Logf("killed after printing %d; the restart resumed at %d: %d messages printed again", killedAt, resumed, redelivered)
	if redelivered > rate {
		t.Fatalf("the restart printed %d messages again, more than one second's worth (%d)", redelivered, rate)
	}
	if err := pub.Wait(); err != nil {
		t.Fatalf("umpub: %v\n%s", err, pubErr.String())
	}
}
