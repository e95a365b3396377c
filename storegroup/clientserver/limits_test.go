package clientserver

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Connections are counted per store, per address and against the
// process's budget, whichever is met first; a released connection frees
// its place in all three.
func TestConnCounterLimits(t *testing.T) {
	addr := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }
	type step struct {
		ip     string
		admit  bool
		reason int
	}
	tests := []struct {
		name   string
		limits Limits
		budget int
		steps  []step
	}{
		{"per address, then per store", Limits{MaxConns: 3, MaxConnsPerAddr: 2}, 100, []step{
			{"10.0.0.1", true, 0}, {"10.0.0.1", true, 0}, {"10.0.0.1", false, connRefusedAddrLimit},
			{"::ffff:10.0.0.1", false, connRefusedAddrLimit}, // the same address, IPv4-mapped
			{"10.0.0.2", true, 0}, {"10.0.0.3", false, connRefusedStoreLimit},
		}},
		{"the process budget", Limits{MaxConns: 10, MaxConnsPerAddr: 10}, 2, []step{
			{"10.0.0.1", true, 0}, {"10.0.0.2", true, 0}, {"10.0.0.3", false, connRefusedProcessLimit},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := &budget{max: tt.budget}
			cc := newConnCounter(tt.limits, budget)
			var keys []string
			for i, s := range tt.steps {
				key, reason, ok := cc.admit(addr(s.ip))
				if ok != s.admit || (!ok && reason != s.reason) {
					t.Fatalf("step %d (%s): admitted %v (reason %s), want %v (reason %s)", i+1, s.ip, ok, ConnRefusedNames[reason], s.admit, ConnRefusedNames[s.reason])
				}
				if ok {
					keys = append(keys, key)
				}
			}
			for _, k := range keys {
				cc.release(k)
			}
			if cc.total != 0 || len(cc.perAddr) != 0 || budget.n.Load() != 0 {
				t.Fatalf("after releasing every connection: total %d, addresses %v, budget used %d", cc.total, cc.perAddr, budget.n.Load())
			}
			if _, _, ok := cc.admit(addr(tt.steps[0].ip)); !ok {
				t.Fatal("a released place was not given again")
			}
		})
	}
}

// Zero limits take the defaults; the idle bound never falls below twice
// the source-activity timeout; the address bound never exceeds the store's,
// nor the sources of one connection the store's.
func TestClientLimitsDefaults(t *testing.T) {
	d := DefaultLimits()
	if d.MaxConns < 1 || d.MaxConns > processConnBudget().max || d.MaxConnsPerAddr > d.MaxConns {
		t.Fatalf("defaults %+v against a process budget of %d", d, processConnBudget().max)
	}
	if d.MaxSourcesPerConn != 100_000 || d.MaxSources != 200_000 || d.MaxReceiversPerConn != 10_000 {
		t.Fatalf("registration defaults %+v", d)
	}
	// with returns the defaults with f applied.
	with := func(f func(*Limits)) Limits {
		l := d
		f(&l)
		return l
	}
	tests := []struct {
		name     string
		in       Limits
		activity time.Duration
		want     Limits
	}{
		{"all defaults", Limits{}, 30 * time.Second, d},
		{"a long activity timeout", Limits{IdleTimeout: time.Minute}, 5 * time.Minute,
			with(func(l *Limits) { l.IdleTimeout = 10 * time.Minute })},
		{"an address bound above the store's", Limits{MaxConns: 10, MaxConnsPerAddr: 50, IdleTimeout: time.Second, FrameTimeout: time.Second}, 0,
			with(func(l *Limits) {
				l.MaxConns, l.MaxConnsPerAddr, l.IdleTimeout, l.FrameTimeout = 10, 10, time.Second, time.Second
			})},
		{"registration limits set", Limits{MaxSourcesPerConn: 7, MaxSources: 9, MaxReceiversPerConn: 3}, 0,
			with(func(l *Limits) { l.MaxSourcesPerConn, l.MaxSources, l.MaxReceiversPerConn = 7, 9, 3 })},
		{"sources per connection above the store's", Limits{MaxSources: 50}, 0,
			with(func(l *Limits) { l.MaxSourcesPerConn, l.MaxSources = 50, 50 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(tt.activity); got != tt.want {
				t.Fatalf("withDefaults = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Validate refuses a negative limit and names it.
func TestClientLimitsValidate(t *testing.T) {
	tests := []struct {
		in   Limits
		want string // "" accepted
	}{
		{Limits{}, ""},
		{DefaultLimits(), ""},
		{Limits{IdleTimeout: -time.Second}, "IdleTimeout"},
		{Limits{MaxConns: -1}, "MaxConns"},
		{Limits{MaxSourcesPerConn: -1}, "MaxSourcesPerConn"},
		{Limits{MaxSources: -1}, "MaxSources"},
		{Limits{MaxReceiversPerConn: -1}, "MaxReceiversPerConn"},
	}
	for _, tt := range tests {
		err := tt.in.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), "client limit "+tt.want+" must not be negative")) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
