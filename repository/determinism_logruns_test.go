package repository

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// memLog is a raft log in memory for repositories that index it: entry
// data by index, as Apply saw it.
type memLog map[uint64][]byte

func (m memLog) ReadEntry(index uint64) ([]byte, error) {
	d, ok := m[index]
	if !ok {
		return nil, fmt.Errorf("%w: entry %d not in the test log", ErrCorrupt, index)
	}
	return d, nil
}

func logOfEntries(entries []Entry) memLog {
	m := memLog{}
	for _, e := range entries {
		m[e.Index] = e.Data
	}
	return m
}

func openIndexing(t testing.TB, path string, log LogReader) *Repo {
	t.Helper()
	r, err := Open(path, Options{NoSync: true, InitialMmapSize: 16 << 20, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A repository that indexes the log (log runs) applies the same log to the
// same state as one that copies payloads (inline runs), with the same
// results, in one batch, in random batches, and across restarts that
// replay; its references are a function of the entries alone, so a second
// indexing repository holds exactly the same runs.
func TestDeterministicApplyWithLogRuns(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			log := randomLog(seed, 1500)
			mem := logOfEntries(log)
			inline := openTest(t)
			wantResults := map[uint64]string{}
			resultsByIndex(wantResults, mustApply(t, inline, log))
			want := mustDigest(t, inline)

			whole := openIndexing(t, filepath.Join(t.TempDir(), "whole.db"), mem)
			got := map[uint64]string{}
			resultsByIndex(got, mustApply(t, whole, log))
			if !reflect.DeepEqual(got, wantResults) {
				t.Error("results differ between log runs and inline runs")
			}
			rng := rand.New(rand.NewPCG(seed, 9))
			path := filepath.Join(t.TempDir(), "restarts.db")
			restarted := openIndexing(t, path, mem)
			for i := 0; i < len(log); {
				j := min(len(log), i+1+rng.IntN(30))
				mustApply(t, restarted, log[i:j])
				if rng.IntN(10) == 0 {
					restarted.Close()
					restarted = openIndexing(t, path, mem)
					mustApply(t, restarted, log[max(0, i-rng.IntN(30)):j])
				}
				i = j
			}
			for name, r := range map[string]*Repo{"whole": whole, "restarted": restarted} {
				if d := mustDigest(t, r); d != want {
					t.Errorf("%s: digest %s, want %s", name, d, want)
				}
			}
			if a, b := rawMsgs(t, whole), rawMsgs(t, restarted); !reflect.DeepEqual(a, b) {
				t.Error("two indexing repositories hold different runs for the same log")
			}
			if a, b := rawMsgs(t, whole), rawMsgs(t, inline); reflect.DeepEqual(a, b) {
				t.Error("the indexing repository stored inline runs")
			}
			// Its snapshot carries the payloads: an inline repository
			// restores it without the log.
			copyOf := openTest(t)
			if err := copyOf.Restore(bytes.NewReader(snapshotBytes(t, whole))); err != nil {
				t.Fatal(err)
			}
			if d := mustDigest(t, copyOf); d != want {
				t.Errorf("restored from an indexing repository: digest %s, want %s", d, want)
			}
			if low, _, _ := copyOf.LogRefRange(); low != 0 {
				t.Errorf("a restored repository refers to log entry %d", low)
			}
		})
	}
}

// rawMsgs returns every stored run value by source and key.
func rawMsgs(t *testing.T, r *Repo) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := r.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSources).ForEach(func(name, v []byte) error {
			if v != nil {
				return nil
			}
			return tx.Bucket(bucketSources).Bucket(name).Bucket(bucketMsgs).ForEach(func(k, v []byte) error {
				out[string(name)+"/"+string(k)] = string(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
