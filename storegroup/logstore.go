package storegroup

import (
	"fmt"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"umstore/dirlock"
)

// guardedLogStore is raft's log and stable store, checking the data
// directory's lock before every write: a store whose lease was taken over
// (a paused process resuming after a standby took its place) must not write
// another byte.
//
// A write that fails (disk full, I/O error) stops the store through
// onWriteError: raft would otherwise keep a follower running that can never
// append again, silently behind its group.
type guardedLogStore struct {
	*raftboltdb.BoltStore
	lock         dirlock.Lock
	onWriteError func(error)
}

func (g *guardedLogStore) failed(err error) error {
	if err != nil && g.onWriteError != nil {
		g.onWriteError(err)
	}
	return err
}

func (g *guardedLogStore) check(what string) error {
	if err := g.lock.Check(); err != nil {
		return fmt.Errorf("refusing to %s: %w", what, err)
	}
	return nil
}

// StoreLog implements raft.LogStore.
func (g *guardedLogStore) StoreLog(l *raft.Log) error {
	if err := g.check("write the raft log"); err != nil {
		return err
	}
	return g.failed(g.BoltStore.StoreLog(l))
}

// StoreLogs implements raft.LogStore.
func (g *guardedLogStore) StoreLogs(logs []*raft.Log) error {
	if err := g.check("write the raft log"); err != nil {
		return err
	}
	return g.failed(g.BoltStore.StoreLogs(logs))
}

// DeleteRange implements raft.LogStore.
func (g *guardedLogStore) DeleteRange(min, max uint64) error {
	if err := g.check("compact the raft log"); err != nil {
		return err
	}
	return g.failed(g.BoltStore.DeleteRange(min, max))
}

// Set implements raft.StableStore.
func (g *guardedLogStore) Set(k, v []byte) error {
	if err := g.check("write raft's stable state"); err != nil {
		return err
	}
	return g.failed(g.BoltStore.Set(k, v))
}

// SetUint64 implements raft.StableStore.
func (g *guardedLogStore) SetUint64(k []byte, v uint64) error {
	if err := g.check("write raft's stable state"); err != nil {
		return err
	}
	return g.failed(g.BoltStore.SetUint64(k, v))
}
