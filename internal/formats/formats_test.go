package formats

import (
	"strings"
	"testing"
)

// TestLinesNameTheFormats checks that the description names this binary's
// formats as an operator reads them.
func TestLinesNameTheFormats(t *testing.T) {
	got := String()
	for _, want := range []string{
		"format level: 2; reads levels 1 (v0.1.0), 2 (unreleased)\n",
		"repository format: writes 3, reads 2 to 3\n",
		"snapshot stream: writes UMSNAP02, reads UMSNAP02 UMSNAP01 UMSTAGED\n",
		"client protocol: version 1\n",
		"command types: 1 InitGroup, 2 Register, 3 Publish, ",
		", 9 PublishChecksums, 10 PublishAsChecksums, ",
		", 16 PublishKeyed, 17 Unpublished, 18 ActiveLevel, 19 ForgetSource\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("formats.String() lacks %q; it is:\n%s", want, got)
		}
	}
	if strings.Contains(got, "CommandType(") {
		t.Errorf("a command type without a name:\n%s", got)
	}
}
