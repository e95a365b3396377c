package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ClockJump steps a host daemon's wall clock forward or back by minutes to
// hours (its /debug/clock, served with --debug-clock), holds it there,
// and steps it back: to 0, or first past the true time the other way. The
// step reaches what the stores stamp into their logs and onto disk
// (internal/wallclock), not the durations they measure in memory
// (publisher and receiver activity, age retention, lease renewals by the
// holder), which must therefore come out of the jump unchanged: no live
// session expired (checkSessions), no message released for age and no
// receiver forgotten early (checkLifetimes), no data directory locked by
// two processes (checkLocks).
const ClockJump FaultKind = "clock-jump"

// The steps a clock-jump draws: 5 minutes to 3 hours either way, far
// beyond the stores' timeouts (seconds) and beyond the age and lifetime
// limits the daemons run with (lifetimeLimits), in whole minutes.
const (
	clockStepMin = 5 * time.Minute
	clockStepMax = 3 * time.Hour
)

func init() {
	registerKind(&kindSpec{
		Kind: ClockJump, Order: 130, Weight: 2, Target: targetHost,
		Help: "step a host daemon's wall clock 5m-3h forward or back (--debug-clock), hold it, and step it back (to 0, or past it the other way first)",
		Plan: func(rng *rand.Rand, f *Fault, _ planConfig) {
			f.Hold = between(rng, 2*time.Second, 8*time.Second)
			f.ClockStep = between(rng, clockStepMin, clockStepMax).Round(time.Minute)
			if rng.IntN(2) == 0 {
				f.ClockStep = -f.ClockStep
			}
			f.ClockThrough = rng.IntN(2) == 0
		},
		Describe: func(f Fault) string {
			if f.ClockThrough {
				return fmt.Sprintf(" by %s, then to %s, then back", signed(f.ClockStep), signed(-f.ClockStep))
			}
			return fmt.Sprintf(" by %s, then back", signed(f.ClockStep))
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			return n.jumpClock(ctx, f, rec)
		},
	})
}

// signed writes a duration with its sign: +1h20m0s, -5m0s.
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// jumpClock runs one clock-jump: the host's clock at f.ClockStep for the
// hold (half of it with ClockThrough, then at -f.ClockStep for the other
// half), then back at 0. The clock is put back whatever happens, ctx
// ended or a step refused, with a context of its own; only a daemon that
// is gone is left alone (its next incarnation starts at 0).
func (n *nemesis) jumpClock(ctx context.Context, f Fault, rec *FaultRecord) (err error) {
	h := n.c.host(f.Host)
	if h == nil {
		return fmt.Errorf("clock-jump: no host %q", f.Host)
	}
	inc, running := h.current()
	if !running {
		return fmt.Errorf("clock-jump: host %s is not running: there is no clock to step", f.Host)
	}
	var done []string
	defer func() {
		if now, still := h.current(); !still || now != inc {
			done = append(done, "the daemon is gone: its next incarnation starts at 0")
		} else {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if s, rerr := n.stepClock(rctx, h, inc, 0); rerr != nil {
				err = errors.Join(err, fmt.Errorf("clock-jump: put host %s's clock back: %w", f.Host, rerr))
			} else {
				done = append(done, signed(s.Offset))
			}
		}
		rec.Note = fmt.Sprintf("wall clock of incarnation %d stepped to %s", inc, strings.Join(done, ", then "))
	}()
	phases := []clockPhase{{f.ClockStep, f.Hold}}
	if f.ClockThrough {
		phases = []clockPhase{{f.ClockStep, f.Hold / 2}, {-f.ClockStep, f.Hold - f.Hold/2}}
	}
	for _, p := range phases {
		s, err := n.stepClock(ctx, h, inc, p.offset)
		if err != nil {
			return fmt.Errorf("clock-jump: step host %s's clock to %s: %w", f.Host, signed(p.offset), err)
		}
		done = append(done, signed(s.Offset))
		if err := sleepCtx(ctx, p.hold); err != nil {
			return nil // the run is ending; the clock is put back all the same
		}
	}
	return nil
}

// clockPhase is one offset of a clock-jump and how long it is held.
type clockPhase struct{ offset, hold time.Duration }

// clockAnswer is what /debug/clock answers a step (adminhttp/clock.go).
type clockAnswer struct {
	Offset   string `json:"offset"`
	Previous string `json:"previous"`
	Now      string `json:"now"`
}

// stepClock sets incarnation inc of host h's wall clock offset through
// its admin address, checks that the daemon took it, and records the
// step.
func (n *nemesis) stepClock(ctx context.Context, h *host, inc int, offset time.Duration) (ClockStep, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	form := url.Values{"offset": {offset.String()}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.adminAddr()+"/debug/clock", strings.NewReader(form.Encode()))
	if err != nil {
		return ClockStep{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: %s: %s (is the daemon run with --debug-clock?)", resp.Status, strings.TrimSpace(string(body)))
	}
	var a clockAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: answer %q: %w", body, err)
	}
	got, err := time.ParseDuration(a.Offset)
	if err != nil {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: offset %q: %w", a.Offset, err)
	}
	prev, err := time.ParseDuration(a.Previous)
	if err != nil {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: previous %q: %w", a.Previous, err)
	}
	if got != offset {
		return ClockStep{}, fmt.Errorf("POST /debug/clock: asked for offset %v, the daemon set %v", offset, got)
	}
	s := ClockStep{Host: h.name, Incarnation: inc, At: time.Now(), Offset: got, Previous: prev}
	n.hist.ClockStepped(s)
	n.log.Info("wall clock stepped", "host", h.name, "incarnation", inc, "offset", got, "previous", prev, "daemon_now", a.Now)
	return s, nil
}

// current is the host's daemon incarnation and whether it is running.
func (h *host) current() (int, bool) {
	running := h.running()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.incarnation, running
}
