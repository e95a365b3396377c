package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsCluster is three embedded nats-server instances in this process,
// clustered over loopback, with JetStream on.
type jsCluster struct {
	name       string
	syncAlways bool
	servers    []*server.Server
	clientURL  map[string]string // server name -> nats://...
	streams    int
}

// startJSCluster starts three servers with JetStream, file storage in dir.
// syncAlways sets sync_always (fsync every write before the ack); without it
// JetStream's default applies (sync every 2 minutes).
func startJSCluster(ctx context.Context, name, dir string, syncAlways bool) (*jsCluster, error) {
	c := &jsCluster{name: name, syncAlways: syncAlways, clientURL: map[string]string{}}
	const n = 3
	var clusterPorts []int
	for i := 0; i < n; i++ {
		p, err := freePort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		clusterPorts = append(clusterPorts, p)
	}
	for i := 0; i < n; i++ {
		var routes []*url.URL
		for j, p := range clusterPorts {
			if j != i {
				routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
			}
		}
		opts := &server.Options{
			ServerName: fmt.Sprintf("%s-%d", name, i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			NoLog:      true,
			NoSigs:     true,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			SyncAlways: syncAlways,
			Cluster: server.ClusterOpts{
				Name: name,
				Host: "127.0.0.1",
				Port: clusterPorts[i],
			},
			Routes: routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			c.shutdown()
			return nil, fmt.Errorf("nats server %s: %w", opts.ServerName, err)
		}
		c.servers = append(c.servers, s)
		go s.Start()
	}
	for _, s := range c.servers {
		if !s.ReadyForConnections(30 * time.Second) {
			c.shutdown()
			return nil, fmt.Errorf("nats server %s not ready for connections", s.Name())
		}
		c.clientURL[s.Name()] = s.ClientURL()
		if jc := s.JetStreamConfig(); jc == nil || jc.SyncAlways != syncAlways {
			c.shutdown()
			return nil, fmt.Errorf("nats server %s: JetStream config %+v, want sync_always=%v", s.Name(), jc, syncAlways)
		}
	}
	// Wait until the JetStream meta group has a leader and answers.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := func() error {
			nc, err := nats.Connect(c.servers[0].ClientURL())
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err = js.AccountInfo(actx)
			return err
		}()
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			c.shutdown()
			return nil, fmt.Errorf("JetStream cluster %s not ready: %v", name, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return c, nil
}

func (c *jsCluster) shutdown() {
	for _, s := range c.servers {
		s.Shutdown()
	}
	for _, s := range c.servers {
		s.WaitForShutdown()
	}
}

// jsResult is the outcome of one JetStream publishing run, in the same
// terms as umpub's summary.
type jsResult struct {
	Sent      int     `json:"sent"`
	Acked     int     `json:"acked"`
	Errors    int64   `json:"errors"`
	ElapsedS  float64 `json:"elapsed_s"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	MBPerS    float64 `json:"mb_per_s"`
	LatencyUS Latency `json:"latency_us"`
	// DiskWriteBytes and CPUSeconds are the bench process's, from just
	// before the first publish until its writes stopped after the last ack
	// (see settleProcIO): the three servers of both clusters run in it, so
	// its writes are theirs (the publishers write nothing to disk, and the
	// other cluster is idle); its CPU time includes the publishers'.
	DiskWriteBytes int64   `json:"disk_write_bytes"`
	CPUSeconds     float64 `json:"cpu_s"`
}

// jsPub is one asynchronous publisher (its own connection) of a run.
type jsPub struct {
	sentAt  []time.Time // by message index, written before the publish: what its latency is timed from (see publishJS)
	lat     []time.Duration
	lastAck time.Time
	errs    atomic.Int64
}

// runJS creates a new R3 file stream, publishes l on it with l.sources
// concurrent publishers (each its own connection, subject and window of
// l.flight unacknowledged messages, like umpub's sources and flight size),
// waits for every ack, deletes the stream and reports.
func (c *jsCluster) runJS(ctx context.Context, l load) (jsResult, error) {
	var res jsResult
	c.streams++
	stream := fmt.Sprintf("BENCH%d", c.streams)
	admin, err := nats.Connect(c.servers[0].ClientURL())
	if err != nil {
		return res, err
	}
	defer admin.Close()
	ajs, err := jetstream.New(admin)
	if err != nil {
		return res, err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, err := ajs.CreateStream(cctx, jetstream.StreamConfig{
		Name:     stream,
		Subjects: []string{"bench." + stream + ".>"},
		Storage:  jetstream.FileStorage,
		Replicas: 3,
	})
	if err != nil {
		return res, fmt.Errorf("create stream: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = ajs.DeleteStream(dctx, stream)
	}()
	leaderURL, err := c.waitStreamLeader(cctx, st, stream)
	if err != nil {
		return res, err
	}

	per := l.perSource()
	pubs := make([]*jsPub, l.sources)
	conns := make([]*nats.Conn, l.sources)
	jss := make([]jetstream.JetStream, l.sources)
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	if err := connectJSPubs(leaderURL, l, per, pubs, conns, jss); err != nil {
		return res, err
	}

	// Storage writes and CPU are measured here, after the stream is created
	// and before it is deleted, so that neither is charged to the run; the
	// writes that follow the last ack (the replica outside the quorum,
	// applying to the stream's store) are waited for before the deletion.
	before := readProcIO("self")
	var wg sync.WaitGroup
	errs := make([]error, l.sources)
	for i := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = publishJS(ctx, jss[i], pubs[i], i, fmt.Sprintf("bench.%s.%d", stream, i+1), l, per)
		}()
	}
	wg.Wait()
	res.DiskWriteBytes, res.CPUSeconds = settleProcIO(ctx, "self").since(before)
	if err := res.tally(pubs, errs, l, per); err != nil {
		return res, err
	}
	if res.Acked != res.Sent {
		return res, fmt.Errorf("JetStream: %d of %d acknowledged, %d errors", res.Acked, res.Sent, res.Errors)
	}
	return res, nil
}

// waitStreamLeader waits, within ctx, until the stream has a leader and
// both followers are current, and returns the leader's client URL: the
// run publishes to the leader's server, JetStream's best case (no extra
// hop), as umstore's publisher talks to each group's leader.
func (c *jsCluster) waitStreamLeader(ctx context.Context, st jetstream.Stream, stream string) (string, error) {
	for {
		info, err := st.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == 2 {
			current := true
			for _, r := range info.Cluster.Replicas {
				current = current && r.Current
			}
			if current {
				return c.clientURL[info.Cluster.Leader], nil
			}
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("stream %s has no leader with current replicas: %v", stream, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connectJSPubs sets up the run's publishers, each on a connection of its
// own to leaderURL with a window of l.flight unacknowledged messages,
// filling pubs, conns and jss (one entry per source; the caller closes
// the connections, those opened before a failure too).
func connectJSPubs(leaderURL string, l load, per int, pubs []*jsPub, conns []*nats.Conn, jss []jetstream.JetStream) error {
	for i := range pubs {
		p := &jsPub{sentAt: make([]time.Time, per), lat: make([]time.Duration, 0, per)}
		pubs[i] = p
		nc, err := nats.Connect(leaderURL, nats.Name(fmt.Sprintf("bench-%d", i+1)))
		if err != nil {
			return err
		}
		conns[i] = nc
		// The ack handler runs on the connection's one reply-handling
		// goroutine, so p.lat needs no lock; the message's index is in its
		// first 8 bytes.
		jss[i], err = jetstream.New(nc,
			jetstream.WithPublishAsyncMaxPending(l.flight),
			jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
				now := time.Now()
				p.lat = append(p.lat, now.Sub(p.sentAt[binary.BigEndian.Uint64(m.Data)]))
				p.lastAck = now
			}),
			jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, _ error) {
				p.errs.Add(1)
			}),
		)
		if err != nil {
			return err
		}
	}
	return nil
}

// tally adds up the publishers' counts and latencies into res, the rate
// over the span from the first send to the last ack. It returns the first
// publisher's error, if any.
func (res *jsResult) tally(pubs []*jsPub, errs []error, l load, per int) error {
	var first, last time.Time
	var all []time.Duration
	for i, p := range pubs {
		if errs[i] != nil {
			return errs[i]
		}
		res.Sent += per
		res.Acked += len(p.lat)
		res.Errors += p.errs.Load()
		all = append(all, p.lat...)
		if first.IsZero() || p.sentAt[0].Before(first) {
			first = p.sentAt[0]
		}
		if p.lastAck.After(last) {
			last = p.lastAck
		}
	}
	if res.Acked > 0 && last.After(first) {
		el := last.Sub(first)
		res.ElapsedS = el.Seconds()
		res.MsgsPerS = float64(res.Acked) / el.Seconds()
		res.MBPerS = float64(res.Acked) * float64(l.size) / el.Seconds() / 1e6
	}
	res.LatencyUS = percentiles(all)
	return nil
}

// publishJS sends count messages (random payloads, or dots, after each
// one's index; see jsPayload) asynchronously (paced at l.rate/l.sources
// per second if l.rate > 0, as umpub paces), then waits for every ack.
//
// What a message's latency (its ack's arrival minus p.sentAt) is timed
// from, the same as umpub's recorder on the umstore side: flat out, from
// just before PublishMsgAsync, which blocks while the window is full, as
// umpub times from just before Send; at a fixed rate, from when the
// message was due, start + i*interval, as umpub at --rate times from its
// due time: a publisher held back by a full window, or paced late, is
// charged for the wait, and a system that falls behind its rate shows it
// (no coordinated omission).
func publishJS(ctx context.Context, js jetstream.JetStream, p *jsPub, pub int, subject string, l load, count int) error {
	var interval time.Duration
	if l.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(l.sources) / l.rate)
	}
	var filler *randomFiller
	if l.payload == payloadRandom {
		filler = newRandomFiller(l.seed, uint64(pub)<<32|uint64(l.size))
	}
	start := time.Now()
	for i := 0; i < count; i++ {
		if interval > 0 {
			if err := paceUntil(ctx, start.Add(time.Duration(i)*interval)); err != nil {
				return err
			}
		}
		m := &nats.Msg{Subject: subject, Data: jsPayload(filler, l.size, uint64(i))}
		if interval > 0 {
			p.sentAt[i] = start.Add(time.Duration(i) * interval)
		} else {
			p.sentAt[i] = time.Now()
		}
		for {
			_, err := js.PublishMsgAsync(m)
			if err == nil {
				break
			}
			// The window stayed full for longer than the stall wait
			// (200 ms): nothing was sent; try again, keeping the send time.
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				return fmt.Errorf("publish: %w", err)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	timeout := 2*time.Minute + time.Duration(count)*20*time.Microsecond
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("JetStream: not every message acknowledged after %v", timeout)
	}
}
