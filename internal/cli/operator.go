package cli

import "umstore/placement"

// OperatorToken returns the operators' token: the one in override (a
// --operator-token-file flag) when given, else the one in d's
// security.operator-token-file, else "" (the deployment has none). Both
// sides read it: the stores, which then accept a Shutdown only with it, and
// `umstored stop`, which sends it.
func OperatorToken(d *placement.Deployment, override string) (string, error) {
	path := override
	if path == "" && d != nil && d.Security != nil {
		path = d.Resolve(d.Security.OperatorTokenFile)
	}
	if path == "" {
		return "", nil
	}
	return readToken(path, "the operator token file (security.operator-token-file or --operator-token-file)")
}
