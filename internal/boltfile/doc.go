// Package boltfile keeps a damaged bbolt file from taking its process down.
//
// bbolt maps its file into memory and reads pages straight from the map. A
// file that is shorter than its own meta pages say (truncated by a full disk,
// an operator's mistake, a bad copy) makes the first read of a missing page
// a SIGBUS or SIGSEGV, which Go turns into a fatal error of the whole process
// unless the goroutine asked for a panic instead. A umstore process runs
// several stores; one bad file must stop one store, not all of them.
//
// Two tools, for the two moments a file is read:
//
//   - Check, before bbolt opens (and maps) a file: it reads the two meta
//     pages with ordinary reads, as bbolt would pick one, and refuses a file
//     whose size is smaller than the chosen meta says, or whose metas are
//     both unusable. Its errors wrap ErrDamaged.
//   - Guard, around every call that reads a mapped file: it turns a memory
//     fault (runtime/debug.SetPanicOnFault) or a panic into a *Fault error
//     naming the file, so that the caller stops the one store that owns it.
//     A memory fault, or a panic raised inside bbolt (a page that is not
//     what the file's other pages say), wraps ErrDamaged; a panic in the
//     caller's own code does not, since it may as well be a bug as damage.
//
// Neither can see every kind of damage: a page inside the file whose bytes
// are garbled passes Check, and bbolt may panic on it in a goroutine of its
// own (its open-time free-page scan), where no Guard can reach.
package boltfile
