package storegroup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collectReceivers adds the receivers' gauges, per source and receiver, to a
// scrape of st, and the count of publishers held back by receiver-paced
// persistence.
func (c *storeCollector) collectReceivers(ch chan<- prometheus.Metric, st Status) {
	consumed := c.desc("umstore_receiver_consumed_seq", "Last sequence number a named receiver consumed, as recorded.", "source", "receiver")
	lag := c.desc("umstore_receiver_lag_messages", "Sequence numbers the source holds beyond what a named receiver consumed.", "source", "receiver")
	active := c.desc("umstore_receiver_active", "1 while a named receiver is registered and not expired (receiver-activity-timeout).", "source", "receiver")
	idle := c.desc("umstore_receiver_idle_seconds", "Seconds since a named receiver was last heard from (recorded, or the leader's memory on the leader).", "source", "receiver")
	now := time.Now()
	for _, src := range st.Sources {
		for _, r := range src.Receivers {
			ch <- prometheus.MustNewConstMetric(consumed, prometheus.GaugeValue, float64(r.Consumed), src.Name, r.Name)
			ch <- prometheus.MustNewConstMetric(lag, prometheus.GaugeValue, float64(r.Lag), src.Name, r.Name)
			v := 0.0
			if r.Active {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(active, prometheus.GaugeValue, v, src.Name, r.Name)
			if t, err := time.Parse(time.RFC3339Nano, r.LastActivity); err == nil {
				ch <- prometheus.MustNewConstMetric(idle, prometheus.GaugeValue, now.Sub(t).Seconds(), src.Name, r.Name)
			}
		}
	}
	var held uint64
	if c.s.pacer != nil {
		held = c.s.pacer.Held()
	}
	heldDesc := c.desc("umstore_publishers_held_back_total", "Times this store, as leader, held a publisher back because its source was at its retention limit with messages paced receivers had not consumed (blocking receiver-paced persistence).")
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.CounterValue, float64(held))
}
