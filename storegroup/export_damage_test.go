package storegroup

import (
	"fmt"

	"umstore/repository"
)

// DamageAtRest makes the store's serve paths (Fetch, Subscribe, the other
// groups' repair reads) find the given messages of source damaged at rest,
// as repository.Read reports a message whose stored payload fails its
// checksum: the messages before it and a *repository.CorruptError. The
// repository itself is untouched. Calls add to the damage.
func (s *Store) DamageAtRest(source string, seqs ...uint64) {
	dr := s.repair.damage
	prev, _ := dr.reader.Load().r.(*damagingReader)
	d := &damagingReader{inner: s.repo, damaged: map[msgKey]bool{}}
	if prev != nil {
		for k := range prev.damaged {
			d.damaged[k] = true
		}
	}
	for _, seq := range seqs {
		d.damaged[msgKey{source, seq}] = true
	}
	dr.setReader(d)
}

// damagingReader reads the repository and stops before a damaged message.
type damagingReader struct {
	inner   messageReader
	damaged map[msgKey]bool
}

func (d *damagingReader) Read(source string, from, to uint64, maxCount, maxBytes int) ([]repository.Message, error) {
	msgs, err := d.inner.Read(source, from, to, maxCount, maxBytes)
	for i, m := range msgs {
		if d.damaged[msgKey{source, m.Seq}] {
			return msgs[:i], fmt.Errorf("read %q [%d,%d]: %w", source, from, to, &repository.CorruptError{Source: source, Seq: m.Seq})
		}
	}
	return msgs, err
}
