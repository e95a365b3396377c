package repository

import (
	"fmt"
	"path/filepath"
	"testing"
)

// publishBatch builds one Apply batch as raft delivers it: 64 entries of
// msgs messages of 64 bytes each, continuing source seq and raft index.
func publishBatch(index *uint64, seq *uint64, msgs int) []Entry {
	const entries, size = 64, 64
	batch := make([]Entry, entries)
	payload := make([]byte, size)
	for i := range batch {
		p := make([][]byte, msgs)
		for j := range p {
			p[j] = payload
		}
		*index++
		batch[i] = Entry{Index: *index, Term: 1, Data: EncodePublish(Publish{Source: "bench", FirstSeq: *seq, Payloads: p})}
		*seq += uint64(msgs)
	}
	return batch
}

// BenchmarkApplyPublish applies batches of 64 Publish entries of 64-byte
// messages: 16 messages per entry (a lightly loaded publisher) and 512 (a
// full Publish, as the store daemon sends under load).
func BenchmarkApplyPublish(b *testing.B) {
	for _, msgs := range []int{16, 512} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("msgs=%d/sync=%v", msgs, sync), func(b *testing.B) {
				benchmarkApplyPublish(b, msgs, sync)
			})
		}
	}
}

func benchmarkApplyPublish(b *testing.B, msgs int, sync bool) {
	r, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: !sync})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	// Fewer pre-built batches for big entries: they are rebuilt outside the
	// timer whenever used up.
	index, seq := uint64(0), uint64(1)
	batches := make([][]Entry, 0, max(1, 1024/msgs))
	for range cap(batches) {
		batches = append(batches, publishBatch(&index, &seq, msgs))
	}
	b.SetBytes(int64(64 * msgs * 64))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%len(batches) == 0 {
			b.StopTimer()
			for j := range batches {
				batches[j] = publishBatch(&index, &seq, msgs)
			}
			b.StartTimer()
		}
		if _, err := r.Apply(batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64*msgs)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkEncodePublish(b *testing.B) {
	c := Publish{Source: "orders", FirstSeq: 1 << 20, Payloads: make([][]byte, 16)}
	for i := range c.Payloads {
		c.Payloads[i] = make([]byte, 64)
	}
	b.SetBytes(16 * 64)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.FirstSeq++
		EncodePublish(c)
	}
}

func BenchmarkDecodePublish(b *testing.B) {
	c := Publish{Source: "orders", FirstSeq: 1 << 20, Payloads: make([][]byte, 16)}
	for i := range c.Payloads {
		c.Payloads[i] = make([]byte, 64)
	}
	data := EncodePublish(c)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}
