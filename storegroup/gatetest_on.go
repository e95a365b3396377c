//go:build umstore_gatetest

package storegroup

import (
	"os"

	"umstore/repository"
)

// The hooks of the gate test (e2e/upgrade_gate_test.go), built only with
// -tags umstore_gatetest: a leader proposes a test-only command of level 2
// (repository.CmdGateTest) at every round of its member checks, through
// its gate; with UMSTORE_GATETEST=ungated in its environment the store's
// proposer has no gate, as a release that forgot one would.

// gateTestUngated takes the level gate away (UMSTORE_GATETEST=ungated).
var gateTestUngated = os.Getenv("UMSTORE_GATETEST") == "ungated"

// gateTestTick proposes one CmdGateTest and logs what became of it.
func (s *Store) gateTestTick() {
	if err := s.proposer.Propose(repository.EncodeGateTest()).Error(); err != nil {
		s.log.Info("gate test: the test command was not written", "err", err)
		return
	}
	s.log.Info("gate test: the test command was written", "active_level", s.activeLevel())
}
