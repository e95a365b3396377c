package repository

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Healing a message damaged at rest.
//
// A held message is never overwritten: a Publish of a sequence number
// already held is a duplicate, a no-op. But a message this store found
// damaged (Read returned a CorruptError for it) is missing here in all but
// name, and the only way to get it back is a copy from a healthy member or
// group (repair), which comes as an ordinary Publish of the same sequence
// number: a duplicate. So when a duplicate arrives for a message marked
// damaged, carrying the same CRC32C as the one stored for it, Apply writes
// the new copy in place of the damaged one (its run is split around it, the
// copy stored inline). Everything Apply decides stays the same on every
// store (the command is still counted a duplicate, the logical content is
// unchanged: same payload, same CRC); only this store's physical copy is
// replaced. A duplicate whose CRC differs from the stored one is a
// conflict as always and heals nothing: a damaged CRC cannot be told from
// a reused sequence number, so the message stays missing here (the other
// members serve it).
//
// The marks are kept in memory: after a restart, the next Read finds the
// damage again.

type damagedKey struct {
	source string
	seq    uint64
}

// markDamaged records that Read found message seq of source damaged.
func (r *Repo) markDamaged(source string, seq uint64) {
	r.damageMu.Lock()
	defer r.damageMu.Unlock()
	if r.damaged == nil {
		r.damaged = map[damagedKey]bool{}
	}
	if len(r.damaged) < maxDamagedMarks {
		r.damaged[damagedKey{source, seq}] = true
	}
}

// maxDamagedMarks bounds the marks a badly damaged file can make.
const maxDamagedMarks = 1 << 16

func (r *Repo) isDamaged(source string, seq uint64) bool {
	r.damageMu.Lock()
	defer r.damageMu.Unlock()
	return r.damaged[damagedKey{source, seq}]
}

func (r *Repo) clearDamaged(keys []damagedKey) {
	r.damageMu.Lock()
	defer r.damageMu.Unlock()
	for _, k := range keys {
		delete(r.damaged, k)
	}
}

// HealedCount returns how many damaged messages a repair's copy replaced
// since the repository was opened.
func (r *Repo) HealedCount() uint64 { return r.healed.Load() }

// heal replaces message seq, held in the msgs bucket, with payload (whose
// CRC is crc): the run holding it is split into the messages before it,
// the message alone as an inline run, and the messages after it, each of
// the run's kind.
func (a *applier) heal(msgs *bolt.Bucket, seq uint64, payload []byte, crc uint32) error {
	c := msgs.Cursor()
	k, v := c.Seek(u64(seq))
	if k == nil || binary.BigEndian.Uint64(k) != seq {
		k, v = c.Prev()
	}
	if k == nil || len(k) != 8 {
		return fmt.Errorf("%w: message %d to heal is in no run", ErrFormat, seq)
	}
	first := binary.BigEndian.Uint64(k)
	r, err := openRun(v)
	if err != nil {
		return fmt.Errorf("message run at %d: %w", first, err)
	}
	n := r.left
	if seq < first || seq-first >= uint64(n) {
		return fmt.Errorf("%w: message %d to heal is in no run", ErrFormat, seq)
	}
	// Read the run whole, before the bucket changes under its value.
	type msg struct {
		p     []byte
		l     int
		crc   uint32
		known bool
		pos   uint64
	}
	all := make([]msg, n)
	for i := range all {
		p := r.next()
		all[i] = msg{p: append([]byte(nil), p...), l: r.curLen, crc: r.curCRC, known: r.curKnown, pos: r.curPos}
	}
	kind, index := r.kind, r.index
	piece := func(ms []msg) []byte {
		switch kind {
		case runLog:
			lens, crcs := make([]int, len(ms)), make([]uint32, len(ms))
			for i, m := range ms {
				lens[i], crcs[i] = m.l, m.crc
			}
			return encodeLogRunLens(index, ms[0].pos, lens, crcs)
		case runInline:
			ps, crcs := make([][]byte, len(ms)), make([]uint32, len(ms))
			for i, m := range ms {
				ps[i], crcs[i] = m.p, m.crc
			}
			return encodeInlineRun(ps, crcs)
		}
		ps := make([][]byte, len(ms))
		for i, m := range ms {
			ps[i] = m.p
		}
		return encodeRun(ps)
	}
	at := int(seq - first)
	if err := c.Delete(); err != nil {
		return err
	}
	refs := 0
	if at > 0 {
		if err := msgs.Put(u64(first), piece(all[:at])); err != nil {
			return err
		}
		refs++
	}
	if err := msgs.Put(u64(seq), encodeInlineRun([][]byte{payload}, []uint32{crc})); err != nil {
		return err
	}
	if at+1 < n {
		if err := msgs.Put(u64(seq+1), piece(all[at+1:])); err != nil {
			return err
		}
		refs++
	}
	if kind == runLog {
		// The run counted once for its entry; its pieces count refs times.
		switch refs {
		case 0:
			return dropLogRef(a.meta, index)
		case 2:
			return addLogRef(a.meta, index)
		}
	}
	return nil
}
