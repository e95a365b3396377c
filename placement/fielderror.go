package placement

import (
	"fmt"
	"strings"
)

// FieldError is one problem found in a deployment, located by its key path
// (for example "groups[1].stores[2].host"; list positions count from 0) and,
// when the deployment was read from a file, by file name and line.
type FieldError struct {
	Source  string // file name, or "" for a deployment built in code
	Line    int    // 1-based line, or 0 when unknown
	Path    string // key path
	Problem string // what is wrong and what to do about it
}

// Error formats the problem as "file:line: path: problem".
func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.Source != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.Source, e.Line)
	case e.Source != "":
		fmt.Fprintf(&b, "%s: ", e.Source)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}
