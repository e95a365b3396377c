// Package dirlock makes sure that at most one process runs a store at a
// time.
//
// A store's data directory holds its raft log and its repository. Two
// processes running the same store would both write them and corrupt
// them, so a store takes a lock on its data directory in Open and keeps it
// for its whole life. A second process for the same store either fails at
// once with an error naming the holder (ErrLocked, as a *LockedError), or,
// in standby mode, waits and takes over when the holder goes away: a hot
// standby on shared storage.
//
// # Modes
//
// ModeFlock (the default) follows the shared-file-system master/slave
// pattern (seed 000): whoever holds an exclusive flock(2) on dir/LOCK is
// the master; standbys try again every AcquireInterval. The kernel, or the
// file server, drops the lock when its holder dies, even by kill -9, so the
// standby takes over within one interval. The holder describes itself in
// dir/LOCK.info (id, pid, host, start time) for other processes' messages.
// It relies on the file system's locks: fine on local disks, NFSv4 (locks
// time out when a client dies) and cluster file systems, not on NFSv3,
// whose server keeps a dead client's lock forever.
//
// ModeLease follows the lease database locker (seed 003), for storage whose
// locks cannot be trusted. The holder owns a lease in dir/LEASE/ that it
// renews every KeepAlive; the lease is good for LeaseDuration after each
// renewal. A standby looks at the lease every AcquireInterval and takes it
// over once it has expired. As in the seed, the acquire interval must be
// longer than the keep-alive period; the seed's locker only warns when it
// is not, Validate refuses (such a configuration is nearly always a mix-up
// of the two settings, and a refused start is easier to notice than a log
// line). Every change of the lease is a compare-and-swap on a version
// number (see leasefile.go), so two standbys racing for an expired lease
// cannot both win, and a holder that was paused cannot overwrite the lease
// of its successor. The file system must support hard links (NFS, CIFS
// and cluster file systems do); the new version's name is re-read after
// every change, so a stale directory listing costs a retry, not safety.
//
// # Clocks
//
// Hosts' clocks disagree, so no process compares its own clock with
// another host's. The lease's age is judged on the storage's clock, which
// all processes share (the seed adjusts to the database's clock the same
// way): a renewal's time is the modification time the storage stamped on
// the lease file, and a standby learns "now on the storage" by writing a
// probe file and reading back its stamp (skew = probe mtime − local time
// just after the write, measured afresh at every attempt). The holder does
// not need the storage clock at all: it counts on its own boot clock from
// just before each renewal, which keeps running while the process is
// stopped (SIGSTOP) or the machine is suspended. Once LeaseDuration −
// SafetyMargin has passed since its last successful renewal, Check fails
// and Lost is closed, so a holder that wakes up after its lease ran out
// stops before writing anything. The same holds for the claim itself: a
// lease whose first write took longer than LeaseDuration − SafetyMargin
// is handed back at once and claimed again, three times at most before
// Acquire fails saying the storage is too slow for the lease settings.
//
// What remains is the usual limit of leases: a process paused between a
// successful Check and the write that follows it writes once more when it
// resumes. SafetyMargin covers short delays (a write batch, timestamp
// granularity of the storage, clock-rate drift); it cannot cover a pause
// that falls exactly there. Keep write batches short compared with the
// margin.
//
// Every process of one store must use the same mode. As a guard, a flock
// holder also refuses a directory whose lease is live.
package dirlock
