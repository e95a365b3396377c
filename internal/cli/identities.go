package cli

import (
	"fmt"

	"umstore/internal/clientperm"
	"umstore/internal/securefile"
	"umstore/placement"
)

// clientIdentities reads the deployment's client identities
// (security.clients): each token file through securefile's checks, each
// pattern parsed, the set checked as a whole (clientperm.NewSet: no two
// identities with one token, none with the deployment's own token). nil
// when the deployment names none.
func clientIdentities(d *placement.Deployment, deploymentToken string) (*clientperm.Set, error) {
	if len(d.Security.Clients) == 0 {
		return nil, nil
	}
	ids := make([]clientperm.Identity, len(d.Security.Clients))
	for i, c := range d.Security.Clients {
		key := fmt.Sprintf("security.clients[%d] (%q)", i, c.Name)
		id := clientperm.Identity{Name: c.Name, TLSName: c.TLSName}
		if c.TokenFile != "" {
			tok, err := securefile.ReadToken(d.Resolve(c.TokenFile), "the token file of client identity "+key)
			if err != nil {
				return nil, err
			}
			id.Token = tok
		}
		var err error
		for _, f := range []struct {
			what string
			in   []string
			out  *[]clientperm.Pattern
		}{{"publish", c.Publish, &id.Publish}, {"receive", c.Receive, &id.Receive}, {"receivers", c.Receivers, &id.Receivers}} {
			if *f.out, err = clientperm.ParsePatterns(f.in); err != nil {
				return nil, fmt.Errorf("%s.%s in the deployment: %w", key, f.what, err)
			}
		}
		ids[i] = id
	}
	set, err := clientperm.NewSet(ids, deploymentToken)
	if err != nil {
		return nil, fmt.Errorf("security.clients in the deployment: %w", err)
	}
	return set, nil
}
