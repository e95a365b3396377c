package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"umstore/placement"
)

// CorruptStore stops a host (kill -9 or gracefully), damages files of one
// or two of its stores (bits flipped inside payloads and inside the last
// pages of data, tails cut; see damage), and starts it again. Only the one
// stopped host's stores are touched, which at worst is a wipe of that host:
// the layout survives it. A store must notice the damage and rejoin its
// group (or read past it safely); a receiver must never be given a payload
// other than the one published (checkIntegrity).
const CorruptStore FaultKind = "corrupt-store"

func init() {
	registerKind(&kindSpec{
		Kind: CorruptStore, Order: 80, Weight: 2, Target: targetHost,
		Help: "stop a host, flip bits in and cut the tail of files (repo.db, the raft log, snapshots) of one or two of its stores, start it",
		Plan: func(rng *rand.Rand, f *Fault, _ planConfig) {
			f.Hold = between(rng, 500*time.Millisecond, 3*time.Second)
			f.Stores = 1 + rng.IntN(2)
			f.Graceful = rng.IntN(3) == 0
			f.Seed = rng.Uint64()
		},
		Describe: func(f Fault) string {
			how := "after kill -9"
			if f.Graceful {
				how = "after a graceful stop"
			}
			return fmt.Sprintf(" %d stores %s", f.Stores, how)
		},
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			h := n.c.host(f.Host)
			if f.Graceful {
				h.stop()
			} else {
				h.kill9()
			}
			note, damaged, err := corruptStores(h, h.deployFile(), f)
			rec.Note, rec.Damaged = note, damaged
			if err != nil {
				return err
			}
			n.log.Info("store files damaged", "host", f.Host, "what", note)
			_ = sleepCtx(ctx, f.Hold)
			return h.start("restart after its store files were damaged")
		},
	})
}

// corruptStores damages the files of f.Stores of the (stopped) host's
// stores, choices drawn from f.Seed, says what it did and names the
// stores whose files it changed.
func corruptStores(h *host, deployment string, f Fault) (note string, damaged []string, err error) {
	d, err := placement.Load(deployment)
	if err != nil {
		return "", nil, err
	}
	rng := rand.New(rand.NewPCG(f.Seed, 0xc0de))
	stores := d.StoresOn(h.name)
	rng.Shuffle(len(stores), func(i, j int) { stores[i], stores[j] = stores[j], stores[i] })
	var did []string
	for _, st := range stores[:min(f.Stores, len(stores))] {
		files := storeFiles(filepath.Join(h.dataDir, st.Store.Name))
		if len(files) == 0 {
			did = append(did, st.Store.Name+": no files (wiped and not yet rejoined)")
			continue
		}
		for range 1 + rng.IntN(2) {
			path := pickFile(rng, files)
			op := []damageOp{flipPayload, flipPayload, flipPage, truncateTail}[rng.IntN(4)]
			what, err := damage(path, op, rng)
			rel, _ := filepath.Rel(h.dataDir, path)
			if err != nil {
				did = append(did, fmt.Sprintf("%s %s: %v", rel, op, err))
				continue
			}
			did = append(did, fmt.Sprintf("%s %s: %s", rel, op, what))
			if !slices.Contains(damaged, st.Store.Name) {
				damaged = append(damaged, st.Store.Name)
			}
		}
	}
	return strings.Join(did, "; "), damaged, nil
}

// pickFile draws a file to damage: the databases and the raft log's
// segments twice as often as all the snapshot files together.
func pickFile(rng *rand.Rand, files []string) string {
	var dbs, snaps []string
	for _, f := range files {
		if strings.HasSuffix(f, ".db") || strings.HasSuffix(f, ".wal") {
			dbs = append(dbs, f)
		} else {
			snaps = append(snaps, f)
		}
	}
	if len(snaps) > 0 && (len(dbs) == 0 || rng.IntN(3) == 0) {
		return snaps[rng.IntN(len(snaps))]
	}
	return dbs[rng.IntN(len(dbs))]
}
