package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/publisher"
)

// childEnv carries a publisher child's configuration (JSON). When it is
// set, the chaos binary (or the chaos test binary) runs as a publisher
// child instead of a harness, so the harness can kill -9 a real publisher
// process and start a new one.
const childEnv = "UMSTORE_CHAOS_PUBLISHER"

// childConfig configures one publisher incarnation.
type childConfig struct {
	Source      string        `json:"source"`
	Deployment  string        `json:"deployment"`
	Incarnation int           `json:"incarnation"`
	Rate        int           `json:"rate"`         // messages per second
	Count       int           `json:"count"`        // most messages to send
	Size        int           `json:"size"`         // payload bytes
	RegisterFor time.Duration `json:"register_for"` // how long to keep trying to register
	// StateFile is the publisher's state file (the last sequence number it
	// was told was stable), kept across incarnations; "" for none.
	StateFile string `json:"state_file,omitempty"`
	// Paced is the receiver-paced persistence the publisher registers the
	// source with ("": none; see RPPSettings).
	Paced publisher.Pacing `json:"paced,omitempty"`
}

// childEvent is one line the child prints on stdout. The harness records
// them in the history.
type childEvent struct {
	Ev          string   `json:"ev"` // registered, stable, register_error, error, fatal, done
	Incarnation int      `json:"inc"`
	FirstSeq    uint64   `json:"first_seq,omitempty"`
	First       uint64   `json:"first,omitempty"`
	Last        uint64   `json:"last,omitempty"`
	Hashes      []string `json:"hashes,omitempty"`
	Sent        uint64   `json:"sent,omitempty"`
	Err         string   `json:"err,omitempty"`
	// Session is the session a registered incarnation holds its source
	// with (publisher.Session): the stores' log names it when they free
	// the source, which the session rule matches (checkSessions).
	Session string `json:"session,omitempty"`
}

// childMain runs one publisher incarnation: register (retrying, bounded),
// then send paced messages whose payloads name source, sequence number and
// incarnation, reporting every stable range with its payload hashes, until
// Count messages are sent or stdin closes; then flush and exit.
func childMain(config string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var cfg childConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		log.Error("bad child configuration", "err", err)
		return 2
	}
	log = log.With("source", cfg.Source, "incarnation", cfg.Incarnation)
	var outMu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	emit := func(e childEvent) {
		e.Incarnation = cfg.Incarnation
		outMu.Lock()
		defer outMu.Unlock()
		_ = enc.Encode(e)
	}
	fatal := func(err error) int {
		emit(childEvent{Ev: "fatal", Err: err.Error()})
		log.Error("publisher child gives up", "err", err)
		return 3
	}
	d, err := placement.Load(cfg.Deployment)
	if err != nil {
		return fatal(err)
	}

	// stop ends sending when the harness closes stdin.
	stop, cancelStop := context.WithCancel(context.Background())
	defer cancelStop()
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		cancelStop()
	}()

	var pendMu sync.Mutex
	pending := map[uint64]string{} // seq -> payload hash, until stable
	pcfg := publisher.DefaultConfig()
	pcfg.Source = cfg.Source
	pcfg.Groups = cli.DeploymentGroups(d)
	pcfg.StateFile = cfg.StateFile
	pcfg.ReceiverPaced = cfg.Paced
	pcfg.Logger = log
	if sharesConnections(cfg.Source) {
		pcfg.Connections = publisher.NewConnections()
	}
	pcfg.OnStable = func(first, last uint64) {
		hashes := make([]string, 0, last-first+1)
		pendMu.Lock()
		for s := first; s <= last; s++ {
			h, ok := pending[s]
			if !ok {
				h = "unknown"
			}
			delete(pending, s)
			hashes = append(hashes, h)
		}
		pendMu.Unlock()
		emit(childEvent{Ev: "stable", First: first, Last: last, Hashes: hashes})
	}

	p, err := registerWithRetry(stop, pcfg, cfg.RegisterFor, log, func(err error) {
		emit(childEvent{Ev: "register_error", Err: err.Error()})
	})
	if err != nil {
		if stop.Err() != nil {
			return 0 // told to stop before it could register
		}
		return fatal(err)
	}
	defer p.Close()
	first := p.FirstSeq()
	emit(childEvent{Ev: "registered", FirstSeq: first, Session: p.Session()})
	log.Info("registered", "first_seq", first)

	interval := time.Second / time.Duration(max(cfg.Rate, 1))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var sent uint64
	for sent < uint64(cfg.Count) && stop.Err() == nil {
		select {
		case <-stop.Done():
			continue
		case <-tick.C:
		}
		seq := first + sent
		payload := makePayload(cfg.Source, seq, cfg.Incarnation, cfg.Size)
		pendMu.Lock()
		pending[seq] = payloadHash(payload)
		pendMu.Unlock()
		got, err := p.Send(stop, payload)
		if err != nil {
			if stop.Err() != nil {
				break
			}
			return fatal(fmt.Errorf("send %d: %w", seq, err))
		}
		if got != seq {
			return fatal(fmt.Errorf("p.Send assigned sequence number %d to the payload built for %d", got, seq))
		}
		sent++
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Flush(flushCtx); err != nil {
		emit(childEvent{Ev: "error", Err: fmt.Sprintf("flush: %v", err)})
	}
	emit(childEvent{Ev: "done", Sent: sent})
	return 0
}

// registerWithRetry creates the publisher, retrying with backoff while the
// stores cannot complete a registration, for at most `within`. After a
// kill -9 the stores hold the source for the dead session until
// source-activity-timeout (30 s by default) expires it, so a restarted
// publisher typically retries for that long.
func registerWithRetry(stop context.Context, cfg publisher.Config, within time.Duration, log *slog.Logger, onErr func(error)) (*publisher.Publisher, error) {
	deadline := time.Now().Add(within)
	backoff := 500 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(stop, 20*time.Second)
		p, err := publisher.New(ctx, cfg)
		cancel()
		if err == nil {
			return p, nil
		}
		if stop.Err() != nil {
			return nil, stop.Err()
		}
		onErr(err)
		log.Warn("registration failed; retrying", "err", err, "backoff", backoff)
		if time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("no registration within %v: %w", within, err)
		}
		if err := sleepCtx(stop, backoff); err != nil {
			return nil, errors.Join(err, stop.Err())
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// sharesConnections says whether the source's publisher reaches the stores
// through a lane of shared connections (publisher.Connections, as a
// process of many sources does) rather than connections of its own: about
// half the sources, by name, so the faults meet both.
func sharesConnections(source string) bool {
	h := fnv.New32a()
	h.Write([]byte(source))
	return h.Sum32()%2 == 1
}
