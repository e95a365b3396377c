package storegroup

import "sync"

// Conflicts between groups: repair's comparison (repair_verify.go) finds
// sequence numbers another group holds with another payload than this
// one. Neither copy is changed (rule 5: a held number is never
// overwritten); receivers resolve it by one rule, the payload of the
// lowest group index that holds it (receiver/conflicts.go), so they get
// the same payload whichever group they read. The store makes the
// conflict plain instead of logging it once: each number is remembered
// (per source, up to maxConflictsKept), counted once in
// umstore_consistency_violations_total, shown as the gauge
// umstore_intergroup_conflicts, in RepairStatus.IntergroupConflicts, per
// source in the status (SourceStatus.Conflicts, wire SourceState.Conflicts)
// and so by umstored status and the status page.

// maxConflictsKept bounds the numbers remembered per source; past it new
// ones are still counted in the total.
const maxConflictsKept = 100_000

// conflictBook remembers the sequence numbers found in conflict, per
// source, each once, for the store's lifetime.
type conflictBook struct {
	mu    sync.Mutex
	seqs  map[string]map[uint64]struct{}
	extra map[string]uint64 // found past maxConflictsKept
}

// add records seqs of source and returns how many were new.
func (b *conflictBook) add(source string, seqs []uint64) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seqs == nil {
		b.seqs, b.extra = map[string]map[uint64]struct{}{}, map[string]uint64{}
	}
	set := b.seqs[source]
	if set == nil {
		set = map[uint64]struct{}{}
		b.seqs[source] = set
	}
	var n uint64
	for _, s := range seqs {
		if _, ok := set[s]; ok {
			continue
		}
		n++
		if len(set) >= maxConflictsKept {
			b.extra[source]++
			continue
		}
		set[s] = struct{}{}
	}
	return n
}

// count returns how many numbers of source were found in conflict.
func (b *conflictBook) count(source string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return uint64(len(b.seqs[source])) + b.extra[source]
}

// total returns how many numbers were found in conflict, all sources.
func (b *conflictBook) total() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n uint64
	for s, set := range b.seqs {
		n += uint64(len(set)) + b.extra[s]
	}
	return n
}
