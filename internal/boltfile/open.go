package boltfile

import (
	"errors"
	"os"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// Open runs open, which opens the bbolt file at path with the options it
// is given (bbolt.Open, or a library's constructor that calls it), after
// Check (and Verify, for a file whose free list is rebuilt at open) and
// under Guard (op says what is opened, for the message). When
// opening faults, bbolt never returns its handle: Open closes the file that
// bbolt opened, unlocking it first (its memory map, which bbolt keeps no
// way to reach, holds the file open, lock included), so that the file can
// be opened again, to inspect it once it is moved aside. The map stays,
// never to be read again.
func Open(path, op string, opts *bolt.Options, open func(*bolt.Options) error) error {
	if err := Check(path); err != nil {
		return err
	}
	o := bolt.Options{}
	if opts != nil {
		o = *opts
	}
	if o.NoFreelistSync {
		if err := Verify(path, o.Timeout); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	var files []*os.File
	openFile := o.OpenFile
	if openFile == nil {
		openFile = os.OpenFile
	}
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := openFile(name, flag, perm)
		if f != nil {
			mu.Lock()
			files = append(files, f)
			mu.Unlock()
		}
		return f, err
	}
	err := Guard(path, op, func() error { return open(&o) })
	var fault *Fault
	if errors.As(err, &fault) {
		mu.Lock()
		for _, f := range files {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
		mu.Unlock()
	}
	return err
}
