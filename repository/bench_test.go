package repository

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// applyShape is one benchmarked Apply batch: entries Publish entries of
// msgs messages of size bytes each.
type applyShape struct {
	entries, msgs, size int
}

// publishBatch builds one Apply batch of shape sh as raft delivers it,
// continuing source seq and raft index.
func publishBatch(index *uint64, seq *uint64, sh applyShape) []Entry {
	entries, msgs, size := sh.entries, sh.msgs, sh.size
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

// BenchmarkApplyPublish applies batches of Publish entries: 64 entries of
// 16 or 512 messages of 64 bytes (a lightly loaded publisher, and full
// frames as the store daemon sends under load), and 2 entries of 512
// messages of 1 KiB (512 KiB entries, two per batch, as the store sees
// them at 1 KiB flat out). With fsync it also reports the bytes the
// process wrote per byte of payload (Linux only): bbolt rewrites the leaf
// it appends to, so this grows with the size of a run (see maxRunSize).
// The runs=log variants index the log instead (log runs: no payload
// written to the file; apply reads nothing from the log).
func BenchmarkApplyPublish(b *testing.B) {
	for _, sh := range []applyShape{{64, 16, 64}, {64, 512, 64}, {2, 512, 1024}} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%d/msgs=%d/entries=%d/sync=%v", sh.size, sh.msgs, sh.entries, sync), func(b *testing.B) {
				benchmarkApplyPublish(b, sh, sync, nil)
			})
			b.Run(fmt.Sprintf("size=%d/msgs=%d/entries=%d/sync=%v/runs=log", sh.size, sh.msgs, sh.entries, sync), func(b *testing.B) {
				benchmarkApplyPublish(b, sh, sync, memLog{})
			})
		}
	}
}

func benchmarkApplyPublish(b *testing.B, sh applyShape, sync bool, log LogReader) {
	r, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: !sync, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	// Fewer pre-built batches for big entries: they are rebuilt outside the
	// timer whenever used up.
	index, seq := uint64(0), uint64(1)
	batches := make([][]Entry, 0, max(1, 1024/sh.msgs))
	for range cap(batches) {
		batches = append(batches, publishBatch(&index, &seq, sh))
	}
	perBatch := sh.entries * sh.msgs
	b.SetBytes(int64(perBatch * sh.size))
	b.ReportAllocs()
	written, measured := writtenBytes()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%len(batches) == 0 {
			b.StopTimer()
			for j := range batches {
				batches[j] = publishBatch(&index, &seq, sh)
			}
			b.StartTimer()
		}
		if _, err := r.Apply(batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*perBatch)/b.Elapsed().Seconds(), "msgs/s")
	if after, ok := writtenBytes(); ok && measured && sync {
		b.ReportMetric(float64(after-written)/float64(b.N*perBatch*sh.size), "written/payload")
	}
}

// writtenBytes is how many bytes this process has passed to write calls
// (wchar in /proc/self/io); ok is false where that is not available.
func writtenBytes() (n int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "wchar:"); found {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
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
