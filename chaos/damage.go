package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The damage a corrupt-store fault does to a stopped store's files, as a
// failing disk does it: single bits flipped, and a file's tail lost. The
// offsets are chosen inside real data: in a bbolt file (repo.db, raft.db)
// the pages below its high-water mark, read from its meta page, so a flip
// or a cut never lands in preallocated space nobody reads; payload bytes
// where a chaos payload can be found (repository runs, raft log entries,
// received snapshots hold them in the clear).

// damageOp is one kind of damage.
type damageOp string

const (
	// flipPayload flips one bit inside a chaos payload found in the file.
	flipPayload damageOp = "flip-payload"
	// flipPage flips one to three bits inside the file's last pages of
	// real data.
	flipPage damageOp = "flip-page"
	// truncateTail cuts the file inside its last pages of real data.
	truncateTail damageOp = "truncate"
)

// bboltMagic starts every valid bbolt meta page.
const bboltMagic = 0xED0CDAED

// bboltExtent reads a bbolt file's page size and high-water mark (the end
// of the pages in use) from the newer of its two valid meta pages; ok is
// false when the file is not a bbolt file with a valid meta page.
func bboltExtent(path string) (pageSize, highWater int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	// A meta page: a 16-byte page header, then magic, version, page size,
	// flags (4 bytes each), the root bucket (16), the freelist page, the
	// high-water page id, the transaction id (8 each) and a checksum (FNV-64a
	// of everything from the magic to the transaction id).
	read := func(off int64) (ps, hw, txid uint64, ok bool) {
		b := make([]byte, 80)
		if _, err := f.ReadAt(b, off); err != nil {
			return 0, 0, 0, false
		}
		m := b[16:]
		le := binary.LittleEndian
		if le.Uint32(m[0:]) != bboltMagic {
			return 0, 0, 0, false
		}
		h := fnv.New64a()
		h.Write(m[:56])
		if h.Sum64() != le.Uint64(m[56:]) {
			return 0, 0, 0, false
		}
		return uint64(le.Uint32(m[8:])), le.Uint64(m[40:]), le.Uint64(m[48:]), true
	}
	ps0, hw0, tx0, ok0 := read(0)
	guess := int64(4096)
	if ok0 {
		guess = int64(ps0)
	}
	ps1, hw1, tx1, ok1 := read(guess)
	switch {
	case ok1 && (!ok0 || tx1 > tx0):
		return int64(ps1), int64(hw1 * ps1), true
	case ok0:
		return int64(ps0), int64(hw0 * ps0), true
	}
	return 0, 0, false
}

// dataRegion is where real data lies in a file: [lo, hi), and the last
// pages of it [tailLo, hi).
type dataRegion struct {
	lo, tailLo, hi int64
	bbolt          bool
}

// regionOf finds the real data of a file of size bytes.
func regionOf(path string, size int64) dataRegion {
	if ps, hw, ok := bboltExtent(path); ok && hw > 2*ps {
		hi := min(hw, size)
		return dataRegion{lo: 2 * ps, tailLo: max(2*ps, hi-4*ps), hi: hi, bbolt: true}
	}
	return dataRegion{lo: 0, tailLo: size / 2, hi: size}
}

// damage does op to the file at path, drawing offsets from rng, and says
// what it did.
func damage(path string, op damageOp, rng *rand.Rand) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	r := regionOf(path, fi.Size())
	if r.hi <= r.lo {
		return "", fmt.Errorf("%s holds no data to damage (%d bytes)", path, fi.Size())
	}
	switch op {
	case truncateTail:
		at := r.tailLo + rng.Int64N(r.hi-r.tailLo)
		if err := os.Truncate(path, at); err != nil {
			return "", err
		}
		return fmt.Sprintf("cut from %d to %d bytes (data ended at %d)", fi.Size(), at, r.hi), nil
	case flipPayload:
		if offs := payloadOffsets(path, r.lo, r.hi); len(offs) > 0 {
			start := offs[rng.IntN(len(offs))]
			at := start + rng.Int64N(min(int64(payloadSize), r.hi-start))
			bit := rng.IntN(8)
			if err := flipBit(path, at, bit); err != nil {
				return "", err
			}
			return fmt.Sprintf("flipped bit %d at %d, inside a payload found at %d (one of %d found)", bit, at, start, len(offs)), nil
		}
		// No payload in the clear: damage the last pages instead.
		fallthrough
	case flipPage:
		n := 1 + rng.IntN(3)
		var at []string
		for range n {
			off := r.tailLo + rng.Int64N(r.hi-r.tailLo)
			bit := rng.IntN(8)
			if err := flipBit(path, off, bit); err != nil {
				return "", err
			}
			at = append(at, fmt.Sprintf("bit %d at %d", bit, off))
		}
		return fmt.Sprintf("flipped %s (last pages of data: %d-%d)", strings.Join(at, ", "), r.tailLo, r.hi), nil
	}
	return "", fmt.Errorf("unknown damage %q", op)
}

// payloadOffsets lists where chaos payloads start in [lo, hi) of a file
// (at most a few thousand, spread over the file).
func payloadOffsets(path string, lo, hi int64) []int64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	marker := []byte("chaos source=")
	var out []int64
	buf := make([]byte, 1<<20)
	for off := lo; off < hi && len(out) < 1<<16; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), hi-off)], off)
		if n == 0 {
			break
		}
		for i := 0; ; {
			j := bytes.Index(buf[i:n], marker)
			if j < 0 {
				break
			}
			out = append(out, off+int64(i+j))
			i += j + len(marker)
		}
		if errors.Is(err, io.EOF) || n < len(marker) {
			break
		}
		off += int64(n - len(marker) + 1) // a marker across the boundary is found next time
	}
	return out
}

// flipBit inverts one bit of the byte at off.
func flipBit(path string, off int64, bit int) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return fmt.Errorf("read %s at %d: %w", path, off, err)
	}
	b[0] ^= 1 << bit
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Sync()
}

// storeFiles lists the files of a store's data directory a corrupt-store
// fault may damage: repo.db, the raft log (raft.db, or raft-wal's segments
// and meta file under wal/), and the files of its snapshots.
func storeFiles(dir string) []string {
	var out []string
	for _, name := range []string{"repo.db", "raft.db", filepath.Join("wal", "wal-meta.db")} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Size() > 0 {
			out = append(out, filepath.Join(dir, name))
		}
	}
	segments, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	sort.Strings(segments)
	for _, p := range segments {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			out = append(out, p)
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "*"))
	sort.Strings(snaps)
	for _, p := range snaps {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			out = append(out, p)
		}
	}
	return out
}
