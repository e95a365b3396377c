package publisher_test

import (
	"os"
	"testing"

	"umstore/internal/testmain"
)

// The tests wait on raft elections and fsync, not the CPU: more of them run
// at once than go test's default of one per core.
func TestMain(m *testing.M) { os.Exit(testmain.Run(m, 6)) }
