package adminhttp

import (
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"time"

	"umstore/placement"
)

// A standby (umstored run --standby) waits, before its stores open, for
// the data directory locks another process holds. Until then it serves a
// standby admin server on the admin address, so that a supervisor and an
// operator can see it is there and what it waits for: /healthz answers
// ok, /readyz 503 "standby: ...", /v1/status says standby, and the page
// says so too. Once the stores are open the daemon closes it and starts
// the full server (Start) on the same address.

// StandbyServer is the admin server of a standby that has not taken its
// stores over yet.
type StandbyServer struct {
	*http.Server
	// Addr is the address listened on (the port chosen, for a port 0).
	Addr string
	host string
	d    *placement.Deployment
}

// standbyStatus is what /v1/status returns while the daemon waits.
type standbyStatus struct {
	Deployment string `json:"deployment"`
	Time       string `json:"time"`
	Host       string `json:"host"`
	Standby    bool   `json:"standby"`
	Ready      bool   `json:"ready"`
	Reason     string `json:"reason"`
}

// StartStandby listens on addr and serves, in the background, the admin
// server of a standby for host of d (see StandbyServer). Close it before
// Start on the same address.
func StartStandby(addr string, d *placement.Deployment, host string, log *slog.Logger, opts Options) (*StandbyServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on admin address %s: %w", addr, err)
	}
	if w := exposure(ln.Addr(), opts); w != "" {
		log.Warn(w, "admin_addr", ln.Addr().String())
	}
	s := &StandbyServer{Addr: ln.Addr().String(), host: host, d: d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /web/{file}", func(w http.ResponseWriter, r *http.Request) { serveWebFile(w, r, r.PathValue("file")) })
	s.Server = &http.Server{Handler: newAllowedHosts(d, opts.AllowedHosts).wrap(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("standby admin server stopped", "err", err)
		}
	}()
	return s, nil
}

// reason says what the standby waits for.
func (s *StandbyServer) reason() string {
	return fmt.Sprintf("standby: waiting for the data directory locks of host %s's stores, held by another process; it takes the stores over when that process exits (its log names the holder)", s.host)
}

func (s *StandbyServer) readyz(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(w, s.reason())
}

func (s *StandbyServer) status(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(standbyStatus{Deployment: s.d.Name, Time: time.Now().UTC().Format(time.RFC3339), Host: s.host, Standby: true, Reason: s.reason()})
}

var standbyPage = template.Must(template.New("standby").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>umstore {{.Deployment}}: host {{.Host}} standby</title>
<link rel="stylesheet" href="/web/style.css"></head>
<body><h1>umstore {{.Deployment}}: host {{.Host}} is a standby</h1>
<p>{{.Reason}}</p>
<p>This page shows the full status once the stores are taken over; reload it then.</p>
</body></html>
`))

func (s *StandbyServer) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", pageSecurity)
	_ = standbyPage.Execute(w, standbyStatus{Deployment: s.d.Name, Host: s.host, Reason: s.reason()})
}
