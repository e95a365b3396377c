// Package version reports which build of umstore a binary is, for the
// commands' --version flags and for bug reports.
//
// Version is set at link time by release builds (the Dockerfile does this):
//
//	go build -ldflags "-X umstore/internal/version.Version=v1.2.3" ./cmd/...
//
// The commit and its time come from the build information the Go toolchain
// stamps into every binary built inside a Git checkout.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release this binary was built from, or "dev" when the
// build did not set it.
var Version = "dev"

// String describes the build on one line, such as
//
//	v1.2.3 (commit 0123456789ab, 2025-01-02T03:04:05Z, go1.26.1 linux/amd64)
//
// The commit and its time are left out when the binary carries no VCS
// information; "modified" is added when the working tree had uncommitted
// changes.
func String() string {
	info, _ := debug.ReadBuildInfo()
	return describe(Version, info, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// describe formats a build description from its parts; info may be nil.
func describe(version string, info *debug.BuildInfo, goVersion, platform string) string {
	if version == "" {
		version = "dev"
	}
	// `go install umstore/cmd/umstored@v1.2.3`, and go build in a tagged
	// checkout, record the module version; use it when the link did not
	// set one.
	if version == "dev" && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		version = info.Main.Version
	}
	var details []string
	if info != nil {
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		// A pseudo-version such as v0.0.0-20250102030405-0123456789ab+dirty
		// already names the commit, its time and whether it was modified.
		rev := shortRevision(settings["vcs.revision"])
		if rev != "" && !strings.Contains(version, rev) {
			details = append(details, "commit "+rev)
			if t := settings["vcs.time"]; t != "" {
				details = append(details, t)
			}
			if settings["vcs.modified"] == "true" {
				details = append(details, "modified")
			}
		}
	}
	details = append(details, strings.TrimSpace(goVersion+" "+platform))
	return version + " (" + strings.Join(details, ", ") + ")"
}

// shortRevision abbreviates a commit hash to the 12 characters Go uses in
// pseudo-versions.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
