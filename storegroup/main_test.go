package storegroup_test

import (
	"os"
	"testing"

	"umstore/internal/testmain"
)

// The tests run in parallel, six at a time: most of their time is spent
// waiting for elections, timeouts and fsyncs, not on the two cores. Those
// that step the process's wall clock (clock_test.go) or change a package
// setting (SetRetentionStep) stay sequential, and so run alone, as do the
// client limit tests (client_limits_test.go): they count connections and
// time bounds that a loaded machine's other clusters would disturb.
func TestMain(m *testing.M) { os.Exit(testmain.Run(m, 6)) }
