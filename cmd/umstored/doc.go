// Command umstored runs umstore's stores.
//
//	umstored plan    lay out stores over hosts and write a deployment file
//	umstored run     run one host's stores from a deployment file
//	umstored dev     run the two-host, two-group topology on loopback in one process
//	umstored status  show groups, leaders and stores of a deployment
//	umstored stop    stop every store of a deployment (or a host) cleanly
//	umstored backup  take an online backup of every group (--out), or check one (--verify)
//	umstored restore lay out one host's stores of a deployment from a backup
//	umstored recover list, promote or give up a group's backups when no store has state
//	umstored version print the version and the formats it reads and writes (also --version)
//
// `umstored COMMAND --help` explains each command's flags.
//
// Each command is one file that parses its flags, calls the package that
// does the work and prints the outcome: placement plans (plan.go,
// plan_systemd.go for the units), storehost runs a host's stores and
// adminhttp serves their admin endpoints (run.go, dev.go), deploystatus
// probes and classifies a deployment (status.go), deploystop stops it
// (stop.go), and storegroup's recovery functions change data directories
// (recover.go), and backup takes, checks and restores backups (backup.go,
// restore.go). store_flags.go holds the flags run and dev share, and
// parseFlags, which reports every flag error with the --help hint.
package main
