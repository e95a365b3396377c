package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"umstore/internal/cli"
	"umstore/placement"
	"umstore/receiver"
)

// receiverEnv carries a durable receiver child's configuration (JSON).
// When it is set, the chaos binary (or the chaos test binary) runs as one
// incarnation of a source's durable receiver, so the harness can kill -9 a
// real receiver process and start the next one.
const receiverEnv = "UMSTORE_CHAOS_RECEIVER"

// receiverChildConfig configures one durable receiver incarnation.
type receiverChildConfig struct {
	Source      string `json:"source"`
	Deployment  string `json:"deployment"`
	Name        string `json:"name"`
	Session     string `json:"session"`
	Incarnation int    `json:"incarnation"`
	// Paced registers the receiver as a paced receiver (its source is the
	// paced one, see RPPSettings).
	Paced bool `json:"paced,omitempty"`
}

// receiverEvent is one line a durable receiver child prints on stdout.
// "d" (a message handed) is the common one, hence the short keys.
type receiverEvent struct {
	// Ev is registered, d (a message handed), missing, follow_error,
	// register_error, closed or fatal.
	Ev       string `json:"ev"`
	Seq      uint64 `json:"s,omitempty"`
	Through  uint64 `json:"t,omitempty"`
	Hash     string `json:"h,omitempty"`
	PubInc   int    `json:"pi,omitempty"`
	Damage   string `json:"dmg,omitempty"`
	At       int64  `json:"at,omitempty"` // Unix nanoseconds
	Resume   uint64 `json:"resume,omitempty"`
	Consumed uint64 `json:"consumed,omitempty"`
	Groups   string `json:"groups,omitempty"`
	Err      string `json:"err,omitempty"`
	// Held lists, with closed, the groups whose farewell the receiver
	// reported refused: they hold the name for another session
	// (receiver.Farewell.HeldByAnother).
	Held []int `json:"held,omitempty"`
}

// receiverChildMain runs one durable receiver incarnation: register under
// the source's name (waiting, if the session is new, until the stores
// expired the killed incarnation's), follow from receiver.Resume, and
// write down every message before the handler returns it (so everything
// the receiver consumed, and so may have acknowledged, is known to the
// harness even after kill -9). When stdin closes it stops following and
// closes, which records its last position, and exits.
func receiverChildMain(config string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var cfg receiverChildConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		log.Error("bad receiver child configuration", "err", err)
		return 2
	}
	log = log.With("source", cfg.Source, "receiver", cfg.Name, "incarnation", cfg.Incarnation)
	var outMu sync.Mutex
	enc := json.NewEncoder(os.Stdout) // one write per line, unbuffered
	emit := func(e receiverEvent) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = enc.Encode(e)
	}
	fatal := func(err error) int {
		emit(receiverEvent{Ev: "fatal", Err: err.Error()})
		log.Error("receiver child gives up", "err", err)
		return 3
	}
	d, err := placement.Load(cfg.Deployment)
	if err != nil {
		return fatal(err)
	}
	stop, cancelStop := context.WithCancel(context.Background())
	defer cancelStop()
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		cancelStop()
	}()

	rcfg := receiver.DefaultConfig()
	rcfg.Source, rcfg.Groups = cfg.Source, cli.DeploymentGroups(d)
	rcfg.Name, rcfg.Session, rcfg.Paced = cfg.Name, cfg.Session, cfg.Paced
	rcfg.Logger = log
	rcfg.OnUnpublished = func(rg receiver.Range) { // told, as a missing range is (rcvproc.go)
		emit(receiverEvent{Ev: "unpublished", Seq: rg.From, Through: rg.To, At: time.Now().UnixNano()})
	}
	r, err := receiver.New(rcfg)
	if err != nil {
		return fatal(err)
	}
	backoff := 500 * time.Millisecond
	for {
		reg, err := r.Register(stop)
		if err == nil {
			emit(receiverEvent{Ev: "registered", Resume: reg.Resume, Consumed: reg.Consumed, Groups: registrationText(reg), At: time.Now().UnixNano()})
			log.Info("registered", "resume", reg.Resume, "consumed", reg.Consumed)
			break
		}
		if stop.Err() != nil {
			r.Close()
			emit(receiverEvent{Ev: "closed"})
			return 0
		}
		// Register waits out a busy name by itself; it gives up only when
		// no group answered at all.
		emit(receiverEvent{Ev: "register_error", Err: err.Error()})
		log.Warn("registration failed; retrying", "err", err, "backoff", backoff)
		if sleepCtx(stop, backoff) != nil {
			continue
		}
		backoff = min(2*backoff, 4*time.Second)
	}

	handle := func(m receiver.Message) error {
		e := receiverEvent{Ev: "d", Seq: m.Seq, Hash: payloadHash(m.Payload), Damage: payloadDamage(cfg.Source, m.Seq, m.Payload), At: time.Now().UnixNano()}
		if p, ok := parsePayload(m.Payload); ok {
			e.PubInc = p.Incarnation
		}
		emit(e) // written down before the message counts as consumed
		return nil
	}
	onMissing := func(rg receiver.Range) {
		emit(receiverEvent{Ev: "missing", Seq: rg.From, Through: rg.To, At: time.Now().UnixNano()})
	}
	for stop.Err() == nil {
		// Follow returns only when stop ends, or when it could not start
		// (no group answered where a new name starts): it then resumes
		// after what this incarnation consumed.
		err := r.Follow(stop, receiver.Resume, handle, onMissing)
		if stop.Err() != nil {
			break
		}
		emit(receiverEvent{Ev: "follow_error", Err: err.Error()})
		log.Warn("follow failed; following again", "err", err)
		_ = sleepCtx(stop, time.Second)
	}
	r.Close()
	var held []int
	for _, f := range r.Farewells() {
		if f.HeldByAnother {
			held = append(held, f.Group)
		}
	}
	emit(receiverEvent{Ev: "closed", Consumed: r.Consumed(), Held: held})
	log.Info("closed", "consumed", r.Consumed())
	return 0
}

// registrationText sums up what each group answered a registration.
func registrationText(reg receiver.Registration) string {
	var parts []string
	for _, g := range reg.Groups {
		s := fmt.Sprintf("group %d: ", g.Group)
		switch {
		case g.Registered:
			s += fmt.Sprintf("registered, consumed %d", g.Consumed)
			if !g.Known {
				s += " (source unknown)"
			}
		default:
			s += "not registered (" + g.Err + ")"
		}
		var stores []string
		for _, st := range g.Stores {
			stores = append(stores, fmt.Sprintf("%s %d", st.Store, st.Consumed))
		}
		if len(stores) > 0 {
			s += ", stores " + strings.Join(stores, " ")
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s consensus, consumed %d: %s", reg.Consensus, reg.Consumed, strings.Join(parts, "; "))
}
