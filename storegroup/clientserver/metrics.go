package clientserver

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is what the client server counts as it works; the store's
// collector exports it, with the store's labels, as
// umstore_client_connections, umstore_client_frames_refused_total,
// umstore_client_connections_refused_total,
// umstore_client_connections_closed_total and
// umstore_publish_frames_per_entry.
type Metrics struct {
	MergedFrames  prometheus.Histogram // Publish frames proposed as one raft entry
	Connections   atomic.Int64         // open client connections
	RefusedFrames [refusedReasons]atomic.Uint64
	RefusedConns  [connRefusals]atomic.Uint64 // limits.go
	ClosedConns   [connClosings]atomic.Uint64
}

// NewMetrics returns the client server's metrics, its histogram labelled
// with labels.
func NewMetrics(labels prometheus.Labels) *Metrics {
	return &Metrics{
		MergedFrames: prometheus.NewHistogram(prometheus.HistogramOpts{
			ConstLabels: labels,
			Name:        "umstore_publish_frames_per_entry",
			Help:        "Client Publish frames proposed together as one raft entry (more than one when a connection's frames queued behind its proposals in flight).",
			Buckets:     prometheus.ExponentialBuckets(1, 2, 10),
		}),
	}
}

func (m *Metrics) refused(reason int) { m.RefusedFrames[reason].Add(1) }

// Reasons a client frame is refused, for umstore_client_frames_refused_total.
const (
	refusedMalformed = iota
	refusedUnknownType
	refusedTooLarge
	refusedInvalid
	refusedUnauthorized
	refusedNotRegistered // a Publish on a connection that did not register its source
	refusedChecksum      // a Publish whose payload does not match its checksum
	refusedSourceLimit   // a registration over MaxSourcesPerConn or MaxSources (limits.go)
	refusedReceiverLimit // a receiver or subscription over MaxReceiversPerConn (limits.go)
	refusedForbidden     // a request the connection's client identity may not make (permissions.go)
	refusedReasons
)

// RefusedReasonNames label Metrics.RefusedFrames, in order.
var RefusedReasonNames = [refusedReasons]string{"malformed", "unknown_type", "too_large", "invalid", "unauthorized", "not_registered", "checksum", "source_limit", "receiver_limit", "forbidden"}

// Reasons a client connection is refused at accept, for
// umstore_client_connections_refused_total.
const (
	connRefusedStoreLimit = iota
	connRefusedAddrLimit
	connRefusedProcessLimit
	connRefusals
)

// ConnRefusedNames label Metrics.RefusedConns, in order.
var ConnRefusedNames = [connRefusals]string{"store_limit", "address_limit", "process_limit"}

// Reasons the store closes a client connection, for
// umstore_client_connections_closed_total.
const (
	connClosedIdle = iota
	connClosedSlowFrame
	connClosings
)

// ConnClosedNames label Metrics.ClosedConns, in order.
var ConnClosedNames = [connClosings]string{"idle", "slow_frame"}
