package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"umstore/placement"
	"umstore/storegroup"
)

// adminServer serves the host's health, readiness and status over HTTP.
type adminServer struct {
	*http.Server
	hosts []*hostStores
	d     *placement.Deployment
}

// hostStatus is what /v1/status returns.
type hostStatus struct {
	Deployment string              `json:"deployment"`
	Time       string              `json:"time"`
	Stores     []storegroup.Status `json:"stores"`
	Ready      bool                `json:"ready"`
}

func startAdmin(addr string, d *placement.Deployment, hosts []*hostStores, log *slog.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on admin address %s: %w", addr, err)
	}
	a := &adminServer{hosts: hosts, d: d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /{$}", a.page)
	mux.Handle("GET /metrics", promhttp.HandlerFor(newRegistry(hosts), promhttp.HandlerOpts{}))
	// Profiling for performance work; the admin address is loopback by default.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	a.Server = &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := a.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("admin server stopped", "err", err)
		}
	}()
	return a, nil
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

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>umstore {{.Deployment}}</title>
<meta http-equiv="refresh" content="2">
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}.bad{color:#b00}</style>
</head><body>
<h1>umstore — {{.Deployment}}</h1>
<p>{{if .Ready}}Ready: every store runs and every group has a leader.{{else}}<span class="bad">Not ready.</span>{{end}} Updated {{.Time}}.</p>
<table><tr><th>store</th><th>group</th><th>state</th><th>leader</th><th>applied index</th><th>group id</th><th>error</th></tr>
{{range .Stores}}<tr><td>{{.Name}}</td><td>{{.Group}}</td><td>{{.State}}</td><td>{{.Leader}}</td><td>{{.AppliedIndex}}</td><td>{{.GroupID}}</td><td class="bad">{{.Error}}</td></tr>
{{end}}</table>
<h2>Sources</h2>
<table><tr><th>store</th><th>source</th><th>highest seq</th><th>oldest retained</th><th>messages</th><th>gaps</th></tr>
{{range .Stores}}{{$s := .Name}}{{range .Sources}}<tr><td>{{$s}}</td><td>{{.Name}}</td><td>{{.HighSeq}}</td><td>{{.LowSeq}}</td><td>{{.Count}}</td><td>{{.Gaps}}</td></tr>
{{end}}{{end}}</table>
<p>Machine-readable: <a href="/v1/status">/v1/status</a> · <a href="/readyz">/readyz</a> · <a href="/healthz">/healthz</a></p>
</body></html>
`))

func (a *adminServer) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTmpl.Execute(w, a.snapshot())
}
