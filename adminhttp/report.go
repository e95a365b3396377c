package adminhttp

import (
	"encoding/json"
	"net/http"
	"time"

	"umstore/deploystatus"
	"umstore/internal/cli"
	"umstore/placement"
	"umstore/storegroup"
	"umstore/storehost"
	"umstore/wire"
)

// Limits of the status page's probes of stores run by other processes.
var pageLimits = deploystatus.Limits{
	// However many browsers poll, the other hosts' stores are asked at
	// most once per Reuse.
	Reuse:        time.Second,
	ProbeTimeout: time.Second,
	RoundTimeout: 3 * time.Second,
	Parallel:     8,
}

// rounder hands out rounds of probes (a deploystatus.Prober; a fake in
// tests).
type rounder interface {
	Round() deploystatus.Round
}

// reporter builds /v1/deployment: the deployment, its failure analysis,
// and each store's state, probing the stores of other processes.
type reporter struct {
	d          *placement.Deployment
	analysis   *placement.Analysis
	hosts      storehost.Hosts
	localHosts []string
	remote     rounder
	// local reads this daemon's stores' statuses (hosts.Statuses; a fake
	// in tests), redact takes the paths out of them (redact.go).
	local  func() []storegroup.Status
	redact redactor
}

// newReporter reports on d for the daemon running hosts: their stores are
// read directly, every other store of d is probed.
func newReporter(d *placement.Deployment, hosts storehost.Hosts) *reporter {
	r := &reporter{d: d, analysis: placement.Analyze(d), hosts: hosts, localHosts: hosts.Names(),
		local: hosts.Statuses, redact: newRedactor(hosts.Stores())}
	local := map[string]bool{}
	for _, s := range hosts.Stores() {
		local[s.Name()] = true
	}
	var others []placement.StoreRef
	for _, ref := range d.Stores() {
		if !local[ref.Store.Name] {
			others = append(others, ref)
		}
	}
	r.remote = deploystatus.NewProber(others, pageDialer(d), pageLimits)
	return r
}

// statuses are this daemon's stores' statuses, without paths.
func (r *reporter) statuses() []storegroup.Status { return r.redact.statuses(r.local()) }

// view is the deployment as seen now.
func (r *reporter) view() deploystatus.View {
	remote := r.remote.Round()
	v := deploystatus.Build(r.d, r.analysis, r.localHosts, r.statuses(), remote, time.Now())
	for i := range v.Stores { // the other hosts' answers too
		v.Stores[i].Error = r.redact.text(v.Stores[i].Error)
	}
	return v
}

// deployment serves /v1/deployment.
func (a *Server) deployment(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.reporter.view())
}

// pageDialer is how the status page reaches the other hosts' stores: as an
// operator's command would (the deployment's client certificate and
// token), or, where the deployment names no client certificate but the
// client ports ask for one, with the store certificate of this host, which
// the daemon holds anyway and which every client port accepts.
func pageDialer(d *placement.Deployment) *wire.Dialer {
	dialer := deploystatus.Dialer(d, "status page", pageLimits.ProbeTimeout)
	if dialer.TLS != nil || d.Security == nil || d.Security.TLS == nil {
		return dialer
	}
	if sec, err := cli.StoreSecurity(d); err == nil && sec.ClientTLS != nil {
		dialer.TLS, dialer.Token = sec.ClientTLS, sec.Token
	}
	return dialer
}
