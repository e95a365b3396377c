// Package testmain runs a package's tests with more of them in parallel
// than go test's default.
//
// go test runs at most GOMAXPROCS tests marked t.Parallel() at once: two on
// a two-core machine. Most tests here spend their time waiting (on raft's
// timeouts, fsync, a child process's lease) rather than computing, so a
// package's TestMain calls [Run] to let more of them wait at the same time.
// A -test.parallel given on the command line still wins, and a binary built
// with -race runs its tests one at a time: the race detector slows every
// goroutine several times, and with two packages' clusters at once raft's
// leaders already lose their quorum (storegroup's and publisher's race runs
// did with two tests each at a time).
package testmain
