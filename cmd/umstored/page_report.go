package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// deploymentReporter builds /v1/deployment: the deployment, its failure
// analysis, and each store's state, probing the stores of other processes.
type deploymentReporter struct {
	d          *placement.Deployment
	analysis   *placement.Analysis
	hosts      []*hostStores
	localHosts []string
	remote     *remoteProber
}

// newDeploymentReporter reports on d for the daemon running hosts: their
// stores are read directly, every other store of d is probed.
func newDeploymentReporter(d *placement.Deployment, hosts []*hostStores) *deploymentReporter {
	r := &deploymentReporter{d: d, analysis: placement.Analyze(d), hosts: hosts}
	local := map[string]bool{}
	for _, hs := range hosts {
		r.localHosts = append(r.localHosts, hs.host)
		for _, s := range hs.stores {
			local[s.Name()] = true
		}
	}
	var others []placement.StoreRef
	for _, ref := range d.Stores() {
		if !local[ref.Store.Name] {
			others = append(others, ref)
		}
	}
	slices.Sort(r.localHosts)
	r.remote = newRemoteProber(others)
	return r
}

// view is the deployment as seen now.
func (r *deploymentReporter) view() deploymentView {
	remote := r.remote.get()
	var local []storegroup.Status
	for _, hs := range r.hosts {
		for _, s := range hs.stores {
			local = append(local, s.Status())
		}
	}
	return buildView(r.d, r.analysis, r.localHosts, local, remote, time.Now())
}

// deployment serves /v1/deployment.
func (a *adminServer) deployment(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.reporter.view())
}
