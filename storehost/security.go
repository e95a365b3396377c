package storehost

import (
	"fmt"
	"log/slog"

	"umstore/placement"
)

// warnWithoutMemberSecret logs, loudly, that d names no member secret:
// its raft ports then take the word of anyone who connects. Such files
// predate the secret and keep working; the warning says the one command
// that fixes it.
func warnWithoutMemberSecret(d *placement.Deployment, log *slog.Logger) {
	if d.Security != nil && d.Security.MemberSecretFile != "" {
		return
	}
	file := d.File()
	if file == "" {
		file = "FILE"
	}
	log.Warn(fmt.Sprintf("UNPROTECTED RAFT PORTS: the deployment names no member secret (security.member-secret-file), so any process that can reach a raft port can write this host's raft logs and erase acknowledged messages. Add one with `umstored plan --add-member-secret --deployment %s`, copy the deployment file and the new secret file to every host, and restart every host", file),
		"deployment", file)
}
