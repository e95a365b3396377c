package adminhttp

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
	"umstore/storehost"
)

// Server serves the hosts' health, readiness and status over HTTP, and the
// status page.
type Server struct {
	*http.Server
	hosts    storehost.Hosts
	d        *placement.Deployment
	reporter *reporter
}

// Options are the admin server's choices beyond its address.
type Options struct {
	// Pprof serves Go's profiler under /debug/pprof/ (umstored run and
	// dev --pprof). Off by default: profiles and goroutine dumps tell
	// whoever can reach the address much about the process, and a CPU
	// profile or trace costs the stores while it runs.
	Pprof bool
	// Clock serves /debug/clock, which steps this process's wall clock
	// (umstored run --debug-clock; the fault suite's clock-jump). Off by
	// default: whoever reaches the address could move the times the stores
	// write into their logs.
	Clock bool
	// Log receives a line for every step of the clock.
	Log *slog.Logger
	// AllowedHosts are names, beyond the ones always allowed (IP
	// addresses, localhost, this machine's host name, the deployment's
	// host addresses), that requests may carry in their Host header
	// (umstored run --admin-allowed-host): the names of a proxy in front
	// of the server. "*" allows any. Other requests are refused with 421
	// (hostcheck.go: DNS rebinding).
	AllowedHosts []string
}

// hostStatus is what /v1/status returns.
type hostStatus struct {
	Deployment string              `json:"deployment"`
	Time       string              `json:"time"`
	Stores     []storegroup.Status `json:"stores"`
	Ready      bool                `json:"ready"`
}

// Start listens on addr and serves, in the background, for the daemon
// that runs hosts of d:
//
//	/                 the status page (web/index.html, style.css, app.js)
//	/v1/deployment    every host, group and store of d with its state now,
//	                  and the failure analysis (what the page draws)
//	/v1/status        this daemon's own stores, in full
//	/healthz, /readyz liveness and readiness of this daemon's stores
//	/metrics          Prometheus metrics
//	/debug/pprof/     profiling, with opts.Pprof only
//	/debug/clock      this process's wall clock offset (GET) and a step of
//	                  it (POST offset=DURATION), with opts.Clock only
//
// None of it asks who is asking, so on an address other than loopback
// Start logs a warning saying what the address exposes. Addr is the
// address listened on. Close stops the server.
func Start(addr string, d *placement.Deployment, hosts storehost.Hosts, log *slog.Logger, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on admin address %s: %w", addr, err)
	}
	if w := exposure(ln.Addr(), opts); w != "" {
		log.Warn(w, "admin_addr", ln.Addr().String())
	}
	a := newServer(d, hosts, opts)
	a.Addr = ln.Addr().String()
	go func() {
		if err := a.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("admin server stopped", "err", err)
		}
	}()
	return a, nil
}

// newServer prepares the admin server of hosts; it does not listen.
func newServer(d *placement.Deployment, hosts storehost.Hosts, opts Options) *Server {
	a := &Server{hosts: hosts, d: d, reporter: newReporter(d, hosts)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/deployment", a.deployment)
	mux.HandleFunc("GET /{$}", a.page)
	mux.HandleFunc("GET /web/{file}", a.asset)
	mux.Handle("GET /metrics", promhttp.HandlerFor(newRegistry(hosts), promhttp.HandlerOpts{}))
	if opts.Pprof {
		// Profiling for performance work, asked for with --pprof.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	if opts.Clock {
		mux.HandleFunc("GET /debug/clock", clockOffset)
		mux.HandleFunc("POST /debug/clock", clockStep(opts.Log))
	}
	a.Server = &http.Server{Handler: newAllowedHosts(d, opts.AllowedHosts).wrap(mux), ReadHeaderTimeout: 5 * time.Second}
	return a
}

func (a *Server) snapshot() hostStatus {
	st := hostStatus{Deployment: a.d.Name, Time: time.Now().UTC().Format(time.RFC3339), Ready: true}
	for _, ss := range a.reporter.statuses() {
		st.Stores = append(st.Stores, ss)
		if ss.Leader == "" || ss.Error != "" {
			st.Ready = false
		}
	}
	return st
}

// readyz answers 200 when every store of this host runs and its group has
// a leader, 503 otherwise.
func (a *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := a.snapshot()
	if !st.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: a store is starting, failed, or its group has no leader")
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *Server) status(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.snapshot())
}

// exposure is the warning to log when the admin server listens on addr,
// or "" when addr is loopback (the default, reachable from this machine
// only).
func exposure(addr net.Addr, opts Options) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return ""
	}
	what := "the status of every store and source of the deployment, its hosts' addresses and ports, and the metrics"
	if opts.Pprof {
		what += ", and (--pprof) profiles, traces and goroutine stacks of this process"
	}
	if opts.Clock {
		what += ", and (--debug-clock) can step this process's wall clock"
	}
	return "the admin address is not loopback: whoever can reach it reads, without any credential, " + what +
		"; listen on 127.0.0.1 and reach it through SSH or an authenticating proxy, or firewall the port"
}
