package adminhttp

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"umstore/storehost"
)

// newRegistry gathers the daemon's metrics: every store's collector (labels
// store and group), the staged restart's phase, and the Go runtime's and
// process's standard metrics.
func newRegistry(hosts storehost.Hosts) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(storesCollector{hosts})
	phase := func(pick func(waiting, catching bool) bool) func() float64 {
		return func() float64 {
			n := 0
			for _, st := range hosts.Statuses() {
				if pick(st.WaitingToJoin, st.CatchingUp) {
					n++
				}
			}
			return float64(n)
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "umstore_staged_restart_stores", Help: "Stores of this daemon in a phase of the staged restart.",
			ConstLabels: prometheus.Labels{"phase": "waiting"},
		}, phase(func(w, _ bool) bool { return w })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "umstore_staged_restart_stores", Help: "Stores of this daemon in a phase of the staged restart.",
			ConstLabels: prometheus.Labels{"phase": "catching_up"},
		}, phase(func(_, c bool) bool { return c })),
	)
	return reg
}

// storesCollector collects every store the hosts run at scrape time: a
// store that umstored started again after damage replaces its predecessor
// (storehost), so the collectors cannot be registered once at start.
type storesCollector struct{ hosts storehost.Hosts }

// Describe sends nothing: the stores' collectors are unchecked.
func (storesCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c storesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.hosts.Stores() {
		s.Collector().Collect(ch)
	}
}
