// Package doccheck holds one test: every repository path the project's
// Markdown documents name exists. A doc that names a file which was moved
// or renamed misleads the next reader more than one that names nothing, so
// `go test ./...` (and so CI) fails on it.
package doccheck
