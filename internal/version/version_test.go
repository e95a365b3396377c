package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Path: "umstore", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tagged := &debug.BuildInfo{Main: debug.Module{Path: "umstore", Version: "v0.3.0"}}
	pseudo := &debug.BuildInfo{Main: debug.Module{Path: "umstore", Version: "v0.0.0-20250102030405-0123456789ab+dirty"}, Settings: vcs.Settings}
	tests := []struct {
		name, version string
		info          *debug.BuildInfo
		want          string
	}{
		{"no build info", "dev", nil, "dev (go1.26.0 linux/amd64)"},
		{"empty version", "", nil, "dev (go1.26.0 linux/amd64)"},
		{"linked version and VCS", "v1.2.3", vcs, "v1.2.3 (commit 0123456789ab, 2025-01-02T03:04:05Z, modified, go1.26.0 linux/amd64)"},
		{"dev with VCS", "dev", vcs, "dev (commit 0123456789ab, 2025-01-02T03:04:05Z, modified, go1.26.0 linux/amd64)"},
		{"module version when not linked", "dev", tagged, "v0.3.0 (go1.26.0 linux/amd64)"},
		{"linked version wins", "v1.2.3", tagged, "v1.2.3 (go1.26.0 linux/amd64)"},
		{"pseudo-version names the commit", "dev", pseudo, "v0.0.0-20250102030405-0123456789ab+dirty (go1.26.0 linux/amd64)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(tt.version, tt.info, "go1.26.0", "linux/amd64"); got != tt.want {
				t.Errorf("describe = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStringIsOneLine(t *testing.T) {
	s := String()
	if strings.Contains(s, "\n") {
		t.Errorf("String() = %q spans lines", s)
	}
	if !strings.Contains(s, "go1.") {
		t.Errorf("String() = %q lacks the Go version", s)
	}
}
