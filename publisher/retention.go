package publisher

// retention holds the payloads of sequence numbers first, first+1, ... in
// a slice with a moving head, so pushing at the back and releasing at the
// front are both cheap. Each payload is held with its CRC32C, computed once
// by Send and sent with it to every group (wire.Publish.Checksums).
type retention struct {
	first uint64   // sequence number of items[head]
	items [][]byte // payloads; items[head:] are live
	crcs  []uint32 // crcs[i] is items[i]'s checksum
	head  int
	bytes int64 // payload bytes held
}

func (r *retention) len() int { return len(r.items) - r.head }

func (r *retention) push(p []byte, crc uint32) {
	r.items = append(r.items, p)
	r.crcs = append(r.crcs, crc)
	r.bytes += int64(len(p))
}

func (r *retention) pop() {
	r.bytes -= int64(len(r.items[r.head]))
	r.items[r.head] = nil
	r.head++
	r.first++
	if r.head > 1024 && r.head*2 > len(r.items) {
		n := copy(r.items, r.items[r.head:])
		clear(r.items[n:])
		r.items = r.items[:n]
		r.crcs = r.crcs[:copy(r.crcs, r.crcs[r.head:])]
		r.head = 0
	}
}

// get returns the payload of seq and its checksum, or false if it is not
// retained.
func (r *retention) get(seq uint64) ([]byte, uint32, bool) {
	if seq < r.first || seq >= r.first+uint64(r.len()) {
		return nil, 0, false
	}
	i := r.head + int(seq-r.first)
	return r.items[i], r.crcs[i], true
}
