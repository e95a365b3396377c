package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"umstore/receiver"
)

// follower is the in-process follower of one source: it follows from the
// first message for the whole schedule and is never killed. It is
// restarted only to be handed a new deployment file (handOut), and then
// resumes one past the last message it was handed, so that what it is
// handed stays one sequence in order.
type follower struct {
	source string
	hist   *History
	log    *slog.Logger
	parent context.Context
	wg     *sync.WaitGroup // the schedule's background work

	mu     sync.Mutex
	file   string
	cancel context.CancelFunc
	done   chan struct{}
}

// start follows source with the groups of file from one past what was
// handed so far.
func (f *follower) start(file string, groups [][]string) {
	ctx, cancel := context.WithCancel(f.parent)
	done := make(chan struct{})
	f.mu.Lock()
	f.file, f.cancel, f.done = file, cancel, done
	f.mu.Unlock()
	from := f.hist.LastDelivered(f.source) + 1
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(done)
		if err := follow(ctx, groups, f.source, from, f.hist, f.log); err != nil {
			f.hist.Problemf("receiver", "%v", err)
		}
	}()
}

// deployment is the file the follower was started with.
func (f *follower) deployment() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.file
}

// handOut stops the follower and starts it again with file's groups.
func (f *follower) handOut(file string, groups [][]string) {
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if f.parent.Err() == nil {
		f.start(file, groups)
	}
}

// follow runs a receiver that follows source from sequence number from
// until ctx ends, recording every message it is handed and every range it
// is told no group holds.
func follow(ctx context.Context, groups [][]string, source string, from uint64, hist *History, log *slog.Logger) error {
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	cfg.Logger = log.With("receiver", "follow")
	// A range its publisher declared never published is passed over as
	// told, as a missing one is: the checker still finds any acknowledged
	// message in it (checkReceiver).
	cfg.OnUnpublished = func(rg receiver.Range) { hist.Missed(source, Range{From: rg.From, To: rg.To}) }
	r, err := receiver.New(cfg)
	if err != nil {
		return fmt.Errorf("follower of %s: %w", source, err)
	}
	defer r.Close()
	err = r.Follow(ctx, from, func(m receiver.Message) error {
		hist.Delivered(source, m.Seq, m.Payload)
		return nil
	}, func(rg receiver.Range) {
		hist.Missed(source, Range{From: rg.From, To: rg.To})
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("follower of %s: %w", source, err)
	}
	return nil
}

// waitFollower waits until the follower of source has got past every
// acknowledged message, at most timeout.
func waitFollower(ctx context.Context, hist *History, source string, timeout time.Duration) error {
	want := hist.MaxAcked(source)
	deadline := time.Now().Add(timeout)
	for hist.LastDelivered(source) < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("the follower of %s reached %d of %d within %v", source, hist.LastDelivered(source), want, timeout)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// finalRead reads every message of source from 1 to the highest any group
// (or any acknowledgement) names, across all groups, retrying a bounded
// time when no group answers.
func finalRead(ctx context.Context, groups [][]string, source string, atLeast uint64, log *slog.Logger) *FinalRead {
	cfg := receiver.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	cfg.Logger = log.With("receiver", "final")
	f := &FinalRead{Hashes: map[uint64]string{}, Incs: map[uint64]int{}, Damaged: map[uint64]string{}}
	r, err := receiver.New(cfg)
	if err != nil {
		f.Err = err.Error()
		return f
	}
	defer r.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := readAll(ctx, r, source, atLeast, f)
		var me *receiver.MissingError
		var re *receiver.ReleasedError
		switch {
		case err == nil:
			return f
		case errors.As(err, &me):
			// Released ranges too, as before the receiver told them
			// apart: the checker allows for what retention may release.
			for _, m := range append(me.Ranges, me.Released...) {
				f.Missing = append(f.Missing, Range{From: m.From, To: m.To})
			}
			return f
		case errors.As(err, &re):
			for _, m := range re.Ranges {
				f.Missing = append(f.Missing, Range{From: m.From, To: m.To})
			}
			return f
		case time.Now().After(deadline) || ctx.Err() != nil:
			f.Err = err.Error()
			return f
		}
		log.Warn("final read failed; retrying", "source", source, "err", err)
		_ = sleepCtx(ctx, time.Second)
	}
}

// readAll is one attempt of the final read.
func readAll(ctx context.Context, r *receiver.Receiver, source string, atLeast uint64, f *FinalRead) error {
	high, err := r.High(ctx)
	if err != nil {
		return err
	}
	f.High = max(high, atLeast)
	clear(f.Hashes)
	clear(f.Incs)
	clear(f.Damaged)
	if f.High == 0 {
		return nil
	}
	return r.Read(ctx, 1, f.High, func(m receiver.Message) error {
		if _, dup := f.Hashes[m.Seq]; dup {
			return fmt.Errorf("the final read was handed %d twice", m.Seq)
		}
		f.Hashes[m.Seq] = payloadHash(m.Payload)
		if d := payloadDamage(source, m.Seq, m.Payload); d != "" {
			f.Damaged[m.Seq] = d
		}
		if p, ok := parsePayload(m.Payload); ok {
			f.Incs[m.Seq] = p.Incarnation
		}
		return nil
	})
}
