package main

import "fmt"

// The lock modes a run's stores lock their data directories with
// (--lock; umstored run --lock).
const (
	// lockFlock is umstored's default: an flock(2) the kernel drops when
	// the daemon dies. No clock takes part in it.
	lockFlock = "flock"
	// lockLease runs every daemon with --lock lease (renewed every second,
	// good for three): a restart after kill -9 waits for the dead
	// daemon's lease to expire, judged on the storage's clock, and a
	// clock-jump steps the clock the holder stamps its renewals with.
	// Pause-host and slow-disk are not drawn: a holder that cannot renew
	// for two seconds steps down by design and its stores stop, which the
	// harness, which restarts no store, would report as a failure.
	lockLease = "lease"
)

// checkLockMode refuses a --lock other than flock or lease.
func checkLockMode(mode string) error {
	if mode != lockFlock && mode != lockLease {
		return fmt.Errorf("--lock %q: want %s or %s", mode, lockFlock, lockLease)
	}
	return nil
}

// lockArgs are the `umstored run` flags of a lock mode: none for flock,
// umstored's default, so that the daemons run the deployment's policy
// unchanged.
func lockArgs(mode string) []string {
	if mode == lockLease {
		return []string{"--lock", lockLease}
	}
	return nil
}

// planConfig is how a run with these options plans a schedule.
func (o options) planConfig(sources []string) planConfig {
	return planConfig{Faults: o.FaultsPerSchedule, Partitions: o.Partitions, SlowDisks: o.SlowDisks, Sources: sources, Only: o.Kinds, LongOutages: o.LongOutages, LeaseLocks: o.Lock == lockLease, PreviousBin: o.PreviousBin != ""}
}
