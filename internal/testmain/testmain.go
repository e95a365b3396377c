package testmain

import (
	"flag"
	"strconv"
	"testing"
)

// Run parses the test flags, sets -test.parallel to parallel unless the
// command line gave one, and runs the tests. A binary built with -race
// runs them one at a time, as it did before this package. It returns m.Run's code, for
// os.Exit.
func Run(m *testing.M, parallel int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			given = true
		}
	})
	if raceDetector {
		parallel = 1
	}
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(parallel)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
