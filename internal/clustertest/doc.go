// Package clustertest runs real store groups inside a test process: real
// raft over TCP on loopback, real bbolt files in the test's temporary
// directory. Tests of the SDKs and of the stores drive it.
//
// Start (or New, with Options) opens the stores and waits for every group's
// leader; everything stops when the test ends. Between two stores the
// harness carries raft's connections itself (storegroup.Config.Dial), so a
// test can cut links without a firewall: Partition, Isolate and Heal.
// EnsureSame checks that a group's stores converged on the same repository
// state, as hashicorp/raft's test cluster does for its FSMs.
package clustertest
