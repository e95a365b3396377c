//go:build umstore_gatetest

package repository

// The test-only command type of the gate test (e2e/upgrade_gate_test.go):
// built only with -tags umstore_gatetest. It is a format change like any
// other: type 99, of level 2, not ignorable, so a binary that does not
// know it (v0.1.0) stops on it. Its body is an empty array and applying
// it changes nothing.

// CmdGateTest is the test-only command type of the gate test.
const CmdGateTest CommandType = 99

// EncodeGateTest returns a CmdGateTest entry.
func EncodeGateTest() []byte { return []byte{byte(CmdGateTest), 0x90} }

func init() {
	// Runs after command_table.go's init (files initialise in name order).
	commands[CmdGateTest] = command("GateTest", func(r *mpReader) struct{} {
		expectFields(r, CmdGateTest, 0)
		return struct{}{}
	}, func(*applier, struct{}, *Result) error { return nil })
	introducedAt[CmdGateTest] = 2
}
