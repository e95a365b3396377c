package main

import (
	"bytes"
	"strings"
	"testing"

	"umstore/internal/formats"
)

// TestVersionNamesTheFormats: --version prints the build, then the formats
// this binary reads and writes (repository, snapshot stream, client
// protocol, command types), as umstored's does.
func TestVersionNamesTheFormats(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--version"}, &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Fatalf("umrcv --version: exit %d, stderr %q", code, errOut.String())
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "umrcv ") {
		t.Errorf("first line %q, want it to start %q", first, "umrcv ")
	}
	if rest != formats.String() || !strings.Contains(rest, "client protocol: version ") {
		t.Errorf("after the first line:\n%s\nwant the formats:\n%s", rest, formats.String())
	}
}
