// Package doccheck holds the tests of the docs: every repository path the
// project's Markdown documents name exists, and every Go file name a
// comment names is the name of a tracked file. A doc that names a file which was moved or
// renamed misleads the next reader more than one that names nothing, so
// `go test ./...` (and so CI) fails on it. A third checks RELEASES: each
// release a commit of the repository, each with its CHANGELOG.md section.
package doccheck
