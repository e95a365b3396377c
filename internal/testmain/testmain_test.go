package testmain

import (
	"flag"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m, 7)) }

// Without -test.parallel on the command line, Run's value is the one in
// force; under the race detector, 1 is.
func TestRunSetsParallel(t *testing.T) {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "test.parallel") {
			t.Skip("-test.parallel is on the command line")
		}
	}
	want := "7"
	if raceDetector {
		want = "1"
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != want {
		t.Errorf("test.parallel = %s, want %s (race detector: %v)", got, want, raceDetector)
	}
}
