package storegroup

import (
	"context"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"umstore/internal/wallclock"
	"umstore/repository"
	"umstore/storegroup/proposal"
)

// retentionStep bounds how many messages one Trim entry drops, so a large
// backlog is released in short transactions (a variable for tests).
var retentionStep uint64 = 100_000

// retainer enforces the per-source retention limits on the leader: it
// proposes Trim entries through the log, so every member drops exactly the
// same messages. Bytes and message counts come from the repository; age
// from the leader's own memory of when it saw each sequence number (it
// samples every RetentionInterval, so age is enforced to within that, and a
// new leader starts sampling afresh: it keeps more, never less).
type retainer struct {
	retainDeps

	mu      sync.Mutex
	samples map[string][]seenAt // per source, ascending
	dropped uint64
}

type seenAt struct {
	seq  uint64
	when time.Time
}

// retainDeps is what retention needs from its store (built in
// Store.wireHelpers, open.go).
type retainDeps struct {
	log      *slog.Logger
	repo     *repository.Repo   // the sources and their retention plans
	proposer *proposal.Proposer // Trim entries go through the group's log
	isLeader func() bool

	// The limits per source (RetentionMaxBytes, RetentionMaxMessages,
	// RetentionMaxAge; 0 disables one) and how often they are checked.
	maxBytes, maxMessages uint64
	maxAge, interval      time.Duration
	// paced: the store allows receiver-paced persistence, so retention runs
	// even without limits (paced sources release what was consumed).
	allowPaced bool
}

func newRetainer(d retainDeps) *retainer {
	return &retainer{retainDeps: d, samples: map[string][]seenAt{}}
}

func (rt *retainer) run(ctx context.Context) {
	if rt.interval <= 0 || (rt.maxBytes == 0 && rt.maxMessages == 0 && rt.maxAge == 0 && !rt.allowPaced) {
		return
	}
	t := time.NewTicker(rt.interval)
	defer t.Stop()
	wasLeader := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leader := rt.isLeader()
		if leader && !wasLeader {
			rt.mu.Lock()
			rt.samples = map[string][]seenAt{}
			rt.mu.Unlock()
		}
		wasLeader = leader
		if leader {
			rt.pass(time.Now())
		}
	}
}

// pass trims every source that is over a limit.
func (rt *retainer) pass(now time.Time) {
	infos, err := rt.repo.Sources()
	if err != nil {
		return
	}
	for _, in := range infos {
		through, reason, err := rt.repo.RetentionPlan(in.Name, rt.maxBytes, rt.maxMessages)
		if err != nil {
			continue
		}
		if age := rt.ageThrough(in, now); age > through {
			through, reason = age, "age"
		}
		through, reason = rt.pacedThrough(in.Name, through, reason)
		if through <= in.TrimmedThrough || in.LowSeq == 0 {
			continue
		}
		// Release all of it in this pass, a step per Trim: one step per
		// pass released at most retentionStep messages per interval (20,000
		// a second per source by default), and a source published faster
		// grew without bound.
		for low := in.LowSeq; ; low += retentionStep + 1 {
			step := min(through, low+retentionStep)
			if !rt.trim(in.Name, step, reason, now) {
				return
			}
			if step >= through {
				break
			}
		}
	}
}

// trim proposes a Trim and counts what it dropped; it reports false if the
// proposal failed (not the leader any more).
func (rt *retainer) trim(source string, through uint64, reason string, now time.Time) bool {
	cmd := repository.EncodeTrim(repository.Trim{Source: source, Through: through, Reason: reason, UnixNano: wallclock.Now().UnixNano()})
	f := rt.proposer.Propose(cmd)
	if err := f.Error(); err != nil {
		return false
	}
	if res, ok := f.Response().(*repository.Result); ok && res.Trim != nil && res.Trim.Dropped > 0 {
		rt.mu.Lock()
		rt.dropped += res.Trim.Dropped
		rt.mu.Unlock()
		rt.log.Info("retention released the oldest messages", "source", source, "through", res.Trim.Through, "dropped", res.Trim.Dropped, "reason", reason)
	}
	return true
}

// ageThrough records when the leader saw the source's newest sequence
// number and returns the highest sequence number seen longer ago than
// RetentionMaxAge (0 if none, or no age limit).
func (rt *retainer) ageThrough(in repository.SourceInfo, now time.Time) uint64 {
	maxAge := rt.maxAge
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ss := rt.samples[in.Name]
	if len(ss) == 0 || ss[len(ss)-1].seq < in.HighSeq {
		ss = append(ss, seenAt{seq: in.HighSeq, when: now})
	}
	var through uint64
	keep := 0
	for i, x := range ss {
		if maxAge > 0 && now.Sub(x.when) > maxAge {
			through = x.seq
			keep = i // older samples are no longer needed
		}
	}
	rt.samples[in.Name] = ss[keep:]
	return through
}

// Dropped returns how many messages retention released while this store led.
func (rt *retainer) Dropped() uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.dropped
}

// logRetentionFit says at start-up how many sources at the byte limit fit
// in the data directory's free space, and warns when not even one does.
func logRetentionFit(log *slog.Logger, dataDir string, limit uint64) {
	if limit == 0 {
		log.Info("no per-source byte limit: the repository grows until the disk is full (set RetentionMaxBytes)")
		return
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err != nil {
		return
	}
	free := st.Bavail * uint64(st.Bsize)
	fit := free / limit
	if fit == 0 {
		log.Warn("the data directory's free space is smaller than one source at its retention limit: the disk may fill before retention releases anything", "free_bytes", free, "limit_bytes_per_source", limit)
		return
	}
	log.Info("retention limits checked against free space", "free_bytes", free, "limit_bytes_per_source", limit, "sources_at_limit_that_fit", fit)
}
