package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// ExitUsage is the exit code of a command given bad flags or arguments.
const ExitUsage = 2

// FlagError reports what Parse of a command's flags returned and gives the
// exit code: 0 for --help (the flag set has printed its usage already),
// else ExitUsage after printing the parser's complaint and where to look,
// e.g.
//
//	umpub: invalid argument "abc" for "--rate" flag: strconv.ParseFloat: parsing "abc": invalid syntax
//	Run 'umpub --help' for usage.
//
// cmd is the command as the user typed it ("umpub", "umstored run").
// pflag's ContinueOnError prints nothing by itself, so without this a
// rejected flag would exit 2 silently.
func FlagError(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	return UsageError(stderr, cmd, err.Error())
}

// UsageError prints a usage mistake (a missing or contradictory flag, a
// stray argument) followed by the --help hint, and returns ExitUsage.
func UsageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", cmd, msg, cmd)
	return ExitUsage
}
