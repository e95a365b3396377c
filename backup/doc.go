// Package backup takes, checks and restores online backups of a deployment
// (`umstored backup`, `umstored backup --verify`, `umstored restore`).
//
// A backup is a directory: one file per group, each the snapshot stream of
// the group's repository (repository.Snapshot.WriteTo, UMSNAP02) that the
// group's leader sent at one applied index while publishing went on (so a
// prefix of what the group holds), and manifest.json, which says what each
// file stands for (the group, its identity, the applied index) and what it
// holds (sources with their highest and oldest sequence numbers, receivers'
// positions), with each file's size and SHA-256, the deployment's policy and
// the binary that took it. Verify checks all of that, and that each file
// decodes into a repository; Restore verifies first, then lays out one
// host's stores of a deployment from it (storegroup.RestoreDataDir) under
// new group identities that name the ones they came from.
package backup
