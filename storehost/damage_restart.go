package storehost

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"umstore/storegroup"
)

// maxDamageRestarts bounds how many times a host starts one store again
// after it stopped on damage in its files. A store whose files are damaged
// again and again (a failing disk, or a fault of the code, whose evidence
// each backup keeps) needs an operator, not another backup.
const maxDamageRestarts = 3

// damageRestarts starts again, in the background, a store that stopped
// itself on damage it found in its files while it ran and marked
// (storegroup.ErrFilesMarkedDamaged): the start moves the files to a
// numbered backup and the store rejoins its group empty, through the
// host's admission, one empty store per group at a time (SPEC §4 rule 4),
// as an operator's restart of the daemon would. Without it the store
// stayed down until someone restarted umstored (found by the chaos suite:
// a run of repo.db whose length bits were flipped opened cleanly and
// failed when an entry was applied to it).
type damageRestarts struct {
	cfgs map[string]storegroup.Config

	mu      sync.Mutex
	life    context.Context // ends with Stop: a restart under way gives up
	end     context.CancelFunc
	wg      sync.WaitGroup
	count   map[string]int  // restarts begun, per store
	running map[string]bool // a restart of the store is under way
}

func (r *damageRestarts) init(cfgs []storegroup.Config) {
	r.cfgs = map[string]storegroup.Config{}
	for _, c := range cfgs {
		r.cfgs[c.Name] = c
	}
	r.life, r.end = context.WithCancel(context.Background())
	r.count, r.running = map[string]int{}, map[string]bool{}
}

// stop ends the restarts under way and waits for them.
func (r *damageRestarts) stop() {
	if r.end == nil {
		return // a Host that was never started
	}
	r.end()
	r.wg.Wait()
}

// restartDamaged begins a restart of every store of h that stopped on
// marked damage, unless one is under way or the store used its restarts.
func (h *Host) restartDamaged(log *slog.Logger) {
	r := &h.restarts
	for _, s := range h.Stores() {
		err := s.Err()
		if err == nil || !errors.Is(err, storegroup.ErrFilesMarkedDamaged) {
			continue
		}
		name := s.Name()
		r.mu.Lock()
		begin := !r.running[name] && r.count[name] < maxDamageRestarts && r.life.Err() == nil
		if begin {
			r.running[name] = true
			r.count[name]++
			r.wg.Add(1)
		}
		n := r.count[name]
		r.mu.Unlock()
		if !begin {
			continue
		}
		log.Warn("a store stopped on damage in its files; starting it again: its files move to a numbered backup and it rejoins its group empty",
			"host", h.name, "store", name, "restart", n, "of_at_most", maxDamageRestarts)
		go h.restart(s, log)
	}
}

// restart waits until old has let go of its data directory, opens the
// store again and puts it in old's place.
func (h *Host) restart(old *storegroup.Store, log *slog.Logger) {
	r := &h.restarts
	name := old.Name()
	defer func() {
		r.mu.Lock()
		r.running[name] = false
		r.mu.Unlock()
		r.wg.Done()
	}()
	select {
	case <-old.Done():
	case <-r.life.Done():
		return
	}
	s, err := storegroup.OpenContext(r.life, r.cfgs[name])
	if err != nil {
		if r.life.Err() == nil {
			log.Error("a store stopped on damaged files could not be started again; fix what the error says and restart the daemon", "host", h.name, "store", name, "err", err)
		}
		return
	}
	h.mu.Lock()
	for i, x := range h.stores {
		if x == old {
			h.stores[i] = s
		}
	}
	h.mu.Unlock()
	if r.life.Err() != nil {
		_ = s.Close() // the host stopped meanwhile: Stop no longer sees it
		return
	}
	log.Info("store started again after damage", "host", h.name, "store", name)
}
