package testmain

import (
	"flag"
	"strconv"
	"testing"
)

// Run parses the test flags, sets -test.parallel to parallel unless the
// command line gave one (or the binary has the race detector, where it
// keeps go test's default), and runs the tests. It returns m.Run's code, for
// os.Exit.
func Run(m *testing.M, parallel int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			given = true
		}
	})
	if !given && !raceDetector {
		if err := flag.Set("test.parallel", strconv.Itoa(parallel)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
