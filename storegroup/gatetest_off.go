//go:build !umstore_gatetest

package storegroup

// Without the umstore_gatetest build tag (every real build) the gate test's
// hooks do nothing; see gatetest_on.go.

// gateTestUngated is false: every store's proposer has its level gate.
const gateTestUngated = false

// gateTestTick does nothing.
func (s *Store) gateTestTick() {}
