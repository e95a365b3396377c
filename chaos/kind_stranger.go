package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Stranger runs a process that is not a member (this program again, as a
// stranger: see strangerMain) against the stores of one host: forged raft
// RPCs posing as a member, malformed raft frames, Publish without
// registration, oversized, truncated and malformed client frames. Nothing
// it sends may take effect, and the stores must stay up (checkStranger).
const Stranger FaultKind = "stranger"

func init() {
	registerKind(&kindSpec{
		Kind: Stranger, Order: 90, Weight: 2, Target: targetHost,
		Help: "a process that is not a member sends a host's raft and client ports forged RPCs (AppendEntries, RequestVote, TimeoutNow, InstallSnapshot), Publish without Register, malformed, oversized and truncated frames",
		Plan: func(rng *rand.Rand, f *Fault, _ planConfig) {
			f.Hold = between(rng, 2*time.Second, 6*time.Second)
			f.Seed = rng.Uint64()
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			return n.runStranger(ctx, f, rec)
		},
	})
}

// runStranger runs the stranger for the fault's hold and records what it
// sent and what came back.
func (n *nemesis) runStranger(ctx context.Context, f Fault, rec *FaultRecord) error {
	// The host's own file places its stores where they listen, also after
	// a replace-host.
	cfg := strangerConfig{Deployment: n.c.host(f.Host).deployFile(), Host: f.Host, Highs: map[string]uint64{}, Seed: f.Seed, For: f.Hold}
	for s := range n.pubs {
		cfg.Highs[s] = n.hist.MaxAcked(s)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	logPath := filepath.Join(n.dir, "stranger.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the stranger's log: %w", err)
	}
	defer lf.Close()
	fmt.Fprintf(lf, "%s stranger against host %s for %v\n", incarnationMarker, f.Host, f.Hold)
	cmd := exec.Command(n.exe)
	cmd.Env = append(os.Environ(), strangerEnv+"="+string(js))
	cmd.Stderr = lf
	cmd.SysProcAttr = childAttrs()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the stranger: %w", err)
	}
	read := make(chan struct{})
	accepted, sent := 0, 0
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(lf, sc.Text())
			var a StrangerAct
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				n.hist.Problemf("harness", "the stranger printed an unreadable line %q: %v", sc.Text(), err)
				continue
			}
			sent++
			if a.Accepted {
				accepted++
			}
			n.hist.Stranger(a)
		}
	}()
	// Every act has a deadline of a few seconds; a stranger that outlives
	// its hold by far is stuck and killed.
	select {
	case <-read:
	case <-time.After(f.Hold + 90*time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-read
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-read
	}
	werr := cmd.Wait()
	rec.Note = fmt.Sprintf("the stranger sent %d things, %d accepted (see stranger.log)", sent, accepted)
	n.log.Info("stranger done", "host", f.Host, "sent", sent, "accepted", accepted)
	if werr != nil && ctx.Err() == nil {
		return fmt.Errorf("the stranger failed: %w (see %s)", werr, logPath)
	}
	return nil
}
