package main

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"umstore/placement"
)

// StoreLayout is one store of the deployment: its group, its host, its
// client port (the planner gives each store its own; a replaced host keeps
// them at its new address).
type StoreLayout struct {
	Name       string `json:"name"`
	Group      int    `json:"group"`
	Host       string `json:"host"`
	ClientPort int    `json:"client_port"`
}

// HostRun is one incarnation of a host daemon as the harness started it:
// where its stores listen, and where the deployment file it was given
// places every host. A replaced host's first run at its new address is
// where its replacement shows. Ended is when the harness saw its process
// gone (zero: it was still running).
type HostRun struct {
	Host        string            `json:"host"`
	Incarnation int               `json:"incarnation"`
	Addr        string            `json:"addr"`
	File        string            `json:"file"`
	FileAddrs   map[string]string `json:"file_addrs"`
	At          time.Time         `json:"at"`
	Ended       time.Time         `json:"ended,omitzero"`
	// Previous is set when the run is of the previous release's binary
	// (upgrade-host).
	Previous bool `json:"previous,omitempty"`
}

// StoreBook is what a store's latest status sample showed of its address
// book: the members of its group it reaches elsewhere than its deployment
// file says, and the members that refuse its own address.
type StoreBook struct {
	Host        string        `json:"host"`
	At          time.Time     `json:"at"`
	Moved       []movedStatus `json:"moved,omitempty"`
	MoveRefused string        `json:"move_refused,omitempty"`
}

// layoutOf lists the stores of a deployment.
func layoutOf(d *placement.Deployment) []StoreLayout {
	var out []StoreLayout
	for _, s := range d.Stores() {
		out = append(out, StoreLayout{Name: s.Store.Name, Group: s.Group, Host: s.Store.Host, ClientPort: s.Store.ClientPort})
	}
	return out
}

// SetLayout records the deployment's stores.
func (h *History) SetLayout(l []StoreLayout) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Layout = l
}

// HostStarted records a host daemon's incarnation.
func (h *History) HostStarted(r HostRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.HostRuns = append(h.HostRuns, r)
}

// HostEnded records that incarnation inc of host's daemon is gone.
func (h *History) HostEnded(host string, inc int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.HostRuns {
		if r := &h.HostRuns[i]; r.Host == host && r.Incarnation == inc {
			r.Ended = at
		}
	}
}

// observeBook keeps what a status sample showed of a store's address
// book (h.mu held).
func (h *History) observeBook(host string, st storeStatus, now time.Time) {
	if h.Books == nil {
		h.Books = map[string]*StoreBook{}
	}
	h.Books[st.Name] = &StoreBook{Host: host, At: now, Moved: st.Moved, MoveRefused: st.MoveRefused}
}

// hostRunAt is the incarnation of host started last at or before t (ok
// false before its first).
func (h *History) hostRunAt(host string, t time.Time) (HostRun, bool) {
	var out HostRun
	ok := false
	for _, r := range h.HostRuns {
		if r.Host == host && !r.At.After(t) {
			out, ok = r, true
		}
	}
	return out, ok
}

// hostWhere names host as it was at t for a violation's detail: "host A",
// and, once it was replaced, its address then and where it came from.
func (h *History) hostWhere(host string, t time.Time) string {
	now, ok := h.hostRunAt(host, t)
	if !ok {
		return "host " + host
	}
	first := now
	for _, r := range h.HostRuns {
		if r.Host == host {
			first = r
			break
		}
	}
	if first.Addr == now.Addr {
		return "host " + host
	}
	return fmt.Sprintf("host %s at %s (replaced; first at %s)", host, now.Addr, first.Addr)
}

// clientAddr is a store's client address on a host address.
func clientAddr(hostAddr string, port int) string {
	return net.JoinHostPort(hostAddr, strconv.Itoa(port))
}
