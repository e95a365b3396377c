package boltfile

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
)

// Fault is a memory fault or a panic that Guard recovered while a mapped
// file was being read.
type Fault struct {
	Path  string // the file being read
	Op    string // what was being done, for the message
	Value any    // what was recovered
	Stack []byte // where
	// InBBolt: the panic was raised inside bbolt's own code (an invalid
	// page type, a failed assertion, a nil page), not by the caller's.
	InBBolt bool
}

// Memory reports whether the fault is a memory access fault (SIGBUS,
// SIGSEGV at a mapped address): a page of the file that is not there (the
// file shrank under its mapping) or could not be read (an I/O error on a
// mapped page).
func (f *Fault) Memory() bool {
	_, ok := f.Value.(interface{ Addr() uintptr })
	return ok
}

// Damaged reports whether the fault says the file is damaged: a memory
// fault, or a panic inside bbolt, which panics on pages that are not what
// its meta and branch pages say. (bbolt's other panics are assertions on
// how it is called, the same whatever the data, which tests catch; what a
// caller may get wrong with the data, bbolt returns as errors.) A panic in
// the caller's code may as well be a bug, and is not damage.
func (f *Fault) Damaged() bool { return f.Memory() || f.InBBolt }

func (f *Fault) Error() string {
	if a, ok := f.Value.(interface{ Addr() uintptr }); ok {
		return fmt.Sprintf("%s: reading %s faulted (memory fault at address %#x): the file is shorter than bbolt's map of it, or a page of it cannot be read: it is damaged", f.Op, f.Path, a.Addr())
	}
	if f.InBBolt {
		return fmt.Sprintf("%s: bbolt panicked reading %s (%v): the file is damaged", f.Op, f.Path, f.Value)
	}
	return fmt.Sprintf("%s: panic while reading %s: %v", f.Op, f.Path, f.Value)
}

// Unwrap makes a fault that says the file is damaged match ErrDamaged.
func (f *Fault) Unwrap() error {
	if f.Damaged() {
		return ErrDamaged
	}
	return nil
}

// panickedInBBolt reports whether the panic being recovered (called from
// the deferred function) was raised by bbolt's code: the first function
// below runtime.gopanic that is not the runtime's own (sigpanic, panicmem).
func panickedInBBolt() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	below := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			below = true
		case below && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt.") || strings.HasPrefix(f.Function, "go.etcd.io/bbolt/")
		}
		if !more {
			return false
		}
	}
}

// Guard runs fn, which reads the bbolt file at path (op says what it does),
// with memory faults turned into panics (runtime/debug.SetPanicOnFault, for
// this goroutine only, restored after), and returns a recovered fault or
// panic as a *Fault instead of letting it end the process. fn's own error
// is returned as it is.
//
// bbolt releases its locks and rolls back a transaction in deferred calls,
// so after a Fault the file can still be closed; but whatever was being
// written is not, and the caller must treat the file as unusable from then
// on (stop using it, and let the next start check it).
func Guard(path, op string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = &Fault{Path: path, Op: op, Value: v, Stack: debug.Stack(), InBBolt: panickedInBBolt()}
		}
	}()
	return fn()
}

// Guarded is one open bbolt file's guard: Run is Guard, except that the
// first fault ends the file's use. Every later Run returns the same error
// without calling its function (a write was cut in the middle; nothing says
// what else is wrong with the file), and OnFault hears of it once, on the
// goroutine that hit the fault. The zero value is not usable: set Path.
type Guarded struct {
	Path    string      // the file
	What    string      // what the file is, for the message: "repository", "raft log"
	OnFault func(error) // optional

	fault atomic.Pointer[error]
}

// Run runs fn (see Guard) unless the file already faulted.
func (g *Guarded) Run(op string, fn func() error) error {
	if p := g.fault.Load(); p != nil {
		return *p
	}
	err := Guard(g.Path, op, fn)
	var f *Fault
	if !errors.As(err, &f) {
		return err
	}
	err = fmt.Errorf("%s %s is unusable after a fault: %w", g.What, g.Path, err)
	if g.fault.CompareAndSwap(nil, &err) && g.OnFault != nil {
		g.OnFault(err)
	}
	return *g.fault.Load()
}

// Err returns the error that ended the file's use, or nil.
func (g *Guarded) Err() error {
	if p := g.fault.Load(); p != nil {
		return *p
	}
	return nil
}
