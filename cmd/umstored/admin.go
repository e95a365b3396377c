package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"umstore/placement"
	"umstore/storegroup"
)

// adminServer serves the host's health, readiness and status over HTTP,
// and the status page: a live picture of the whole deployment.
type adminServer struct {
	*http.Server
	hosts    []*hostStores
	d        *placement.Deployment
	reporter *deploymentReporter
}

// hostStatus is what /v1/status returns.
type hostStatus struct {
	Deployment string              `json:"deployment"`
	Time       string              `json:"time"`
	Stores     []storegroup.Status `json:"stores"`
	Ready      bool                `json:"ready"`
}

// startAdmin listens on addr and serves, in the background:
//
//	/                 the status page (web/index.html, style.css, app.js)
//	/v1/deployment    every host, group and store of d with its state now,
//	                  and the failure analysis (what the page draws)
//	/v1/status        this daemon's own stores, in full
//	/healthz, /readyz liveness and readiness of this daemon's stores
//	/metrics          Prometheus metrics
//	/debug/pprof/     profiling
func startAdmin(addr string, d *placement.Deployment, hosts []*hostStores, log *slog.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on admin address %s: %w", addr, err)
	}
	a := newAdminServer(d, hosts)
	a.Addr = ln.Addr().String()
	go func() {
		if err := a.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("admin server stopped", "err", err)
		}
	}()
	return a, nil
}

// newAdminServer prepares the admin server of hosts; it does not listen.
func newAdminServer(d *placement.Deployment, hosts []*hostStores) *adminServer {
	a := &adminServer{hosts: hosts, d: d, reporter: newDeploymentReporter(d, hosts)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/deployment", a.deployment)
	mux.HandleFunc("GET /{$}", a.page)
	mux.HandleFunc("GET /web/{file}", a.asset)
	mux.Handle("GET /metrics", promhttp.HandlerFor(newRegistry(hosts), promhttp.HandlerOpts{}))
	// Profiling for performance work; the admin address is loopback by default.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	a.Server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return a
}

func (a *adminServer) snapshot() hostStatus {
	st := hostStatus{Deployment: a.d.Name, Time: time.Now().UTC().Format(time.RFC3339), Ready: true}
	for _, hs := range a.hosts {
		for _, s := range hs.stores {
			ss := s.Status()
			st.Stores = append(st.Stores, ss)
			if ss.Leader == "" || ss.Error != "" {
				st.Ready = false
			}
		}
	}
	return st
}

// readyz answers 200 when every store of this host runs and its group has
// a leader, 503 otherwise.
func (a *adminServer) readyz(w http.ResponseWriter, r *http.Request) {
	st := a.snapshot()
	if !st.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: a store is starting, failed, or its group has no leader")
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *adminServer) status(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.snapshot())
}
