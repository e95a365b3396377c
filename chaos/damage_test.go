package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// boltWithPayloads writes a bbolt file holding chaos payloads, as a
// repository does, and returns its path and contents.
func boltWithPayloads(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "repo.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	for batch := range 20 {
		err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("msgs"))
			if err != nil {
				return err
			}
			for i := range 50 {
				seq := uint64(batch*50 + i + 1)
				if err := b.Put([]byte{byte(seq >> 8), byte(seq)}, makePayload("s1", seq, 1, payloadSize)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestBboltExtent(t *testing.T) {
	path, b := boltWithPayloads(t)
	ps, hw, ok := bboltExtent(path)
	if !ok || ps != int64(os.Getpagesize()) || hw <= 2*ps || hw > int64(len(b)) || hw%ps != 0 {
		t.Fatalf("bboltExtent = %d, %d, %v for a file of %d bytes", ps, hw, ok, len(b))
	}
	// Every payload lies below the high-water mark.
	if i := bytes.LastIndex(b, []byte("chaos source=")); int64(i) >= hw {
		t.Fatalf("a payload at %d, above the high-water mark %d", i, hw)
	}
	if offs := payloadOffsets(path, 2*ps, hw); len(offs) < 1000 {
		t.Fatalf("found %d payloads, want the 1000 written", len(offs))
	}
	other := filepath.Join(t.TempDir(), "meta.json")
	os.WriteFile(other, []byte(`{"ID":"x"}`), 0o600)
	if _, _, ok := bboltExtent(other); ok {
		t.Fatal("a JSON file was read as bbolt")
	}
}

// TestDamage does each damage to a bbolt file and checks it landed in real
// data, as described.
func TestDamage(t *testing.T) {
	for _, op := range []damageOp{flipPayload, flipPage, truncateTail} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("%s/%d", op, seed), func(t *testing.T) { testDamage(t, op, seed) })
		}
	}
}

func testDamage(t *testing.T, op damageOp, seed uint64) {
	path, before := boltWithPayloads(t)
	ps, hw, _ := bboltExtent(path)
	what, err := damage(path, op, rand.New(rand.NewPCG(seed, 2)))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if op == truncateTail {
		if n := int64(len(after)); n >= hw || n < hw-4*ps {
			t.Fatalf("%s: cut to %d bytes, want inside the last 4 pages below %d", what, n, hw)
		}
		return
	}
	var diff []int
	for i := range before {
		if before[i] != after[i] {
			diff = append(diff, i)
		}
	}
	if len(diff) == 0 || len(diff) > 3 {
		t.Fatalf("%s: %d bytes differ, want 1 to 3", what, len(diff))
	}
	for _, i := range diff {
		if int64(i) < 2*ps || int64(i) >= hw {
			t.Fatalf("%s: byte %d changed, outside the data (%d-%d)", what, i, 2*ps, hw)
		}
	}
	if op == flipPayload {
		start := bytes.LastIndex(before[:diff[0]+1], []byte("chaos source="))
		p := after[start : start+payloadSize]
		seq := uint64(0)
		if info, ok := parsePayload(before[start : start+payloadSize]); ok {
			seq = info.Seq
		}
		if start < 0 || diff[0]-start >= payloadSize || payloadDamage("s1", seq, p) == "" {
			t.Fatalf("%s: the flip at %d is not inside a payload that now fails its check", what, diff[0])
		}
		if !strings.Contains(what, "inside a payload") {
			t.Fatalf("description %q", what)
		}
	}
}

func TestStoreFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"repo.db", "raft.db", "snapshots/2-10-1/meta.json", "snapshots/2-10-1/state.bin", "rejoin.json", "clean.json"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	got := storeFiles(dir)
	var rel []string
	for _, p := range got {
		r, _ := filepath.Rel(dir, p)
		rel = append(rel, r)
	}
	if strings.Join(rel, " ") != "repo.db raft.db snapshots/2-10-1/meta.json snapshots/2-10-1/state.bin" {
		t.Fatalf("storeFiles = %v", rel)
	}
}

func TestLostFiles(t *testing.T) {
	d := func(size int64, b byte) fileDigest { return fileDigest{size: size, sum: [32]byte{b}} }
	before := map[string]fileDigest{"a": d(10, 1), "b": d(10, 2), "c": d(10, 3), "d": d(5, 4)}
	after := map[string]fileDigest{"a": d(10, 1), "b": d(10, 9), "d": d(3, 4)}
	if got := lostFiles(before, after); got != "unsynced writes lost in 3 of 4 files: b (content), c (gone), d (3 bytes, was 5)" {
		t.Fatalf("lostFiles = %q", got)
	}
	if got := lostFiles(before, before); !strings.HasPrefix(got, "no unsynced writes were lost") {
		t.Fatalf("lostFiles = %q", got)
	}
}
