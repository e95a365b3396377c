package publisher

import (
	"time"

	"umstore/quorum"
)

// flight is what is in flight: the unstable messages base+1 .. base+len,
// with each one's payload size and send time (16 bytes a message), for the
// byte limit and the stability lifetime.
type flight struct {
	epoch    time.Time // send times are nanoseconds since it (monotonic)
	base     uint64    // highest sequence number no longer in flight
	sizes    []int64   // payload sizes, [head:] live
	times    []int64   // send times, parallel to sizes
	head     int
	bytes    int64  // payload bytes in flight
	over     bool   // FlightNotify: FlightOver was reported and FlightUnder not yet
	reported uint64 // messages up to here were reported past their lifetime
}

func (f *flight) reset(base uint64) {
	*f = flight{epoch: time.Now(), base: base, reported: base}
}

func (f *flight) len() int { return len(f.sizes) - f.head }

func (f *flight) now() int64 { return int64(time.Since(f.epoch)) }

// full reports whether the flight is full for a message of n bytes: count
// messages in flight at the count limit, or (with a byte limit) n more
// bytes over it while something is in flight.
func (f *flight) full(count int, n int, c *Config) bool {
	if count >= c.FlightSize {
		return true
	}
	return c.FlightSizeBytes > 0 && count > 0 && f.bytes+int64(n) > c.FlightSizeBytes
}

func (f *flight) push(size int, at int64) {
	f.sizes = append(f.sizes, int64(size))
	f.times = append(f.times, at)
	f.bytes += int64(size)
}

// settle takes everything up to stable out of the flight.
func (f *flight) settle(stable uint64) {
	for f.base < stable && f.len() > 0 {
		f.bytes -= f.sizes[f.head]
		f.head++
		f.base++
	}
	f.base = max(f.base, stable)
	if f.head > 1024 && f.head*2 > len(f.sizes) {
		n := copy(f.sizes, f.sizes[f.head:])
		copy(f.times, f.times[f.head:])
		f.sizes, f.times, f.head = f.sizes[:n], f.times[:n], 0
	}
}

// expire returns the messages in flight, not reported before, that were
// sent at least lifetime before now, and marks them reported.
func (f *flight) expire(now int64, lifetime time.Duration) (quorum.Range, bool) {
	from := max(f.reported, f.base) + 1
	last := from - 1
	for seq := from; seq <= f.base+uint64(f.len()); seq++ {
		if now-f.times[f.head+int(seq-f.base-1)] < int64(lifetime) {
			break
		}
		last = seq
	}
	if last < from {
		return quorum.Range{}, false
	}
	f.reported = last
	return quorum.Range{From: from, To: last}, true
}

// flightFullLocked settles the flight and reports whether it is full for a
// message of n bytes. Caller holds p.mu.
func (p *Publisher) flightFullLocked(n int) bool {
	p.settleFlightLocked()
	return p.flight.full(int(p.nextSeq-1-p.flightBaseLocked()), n, &p.cfg)
}

// flightSentLocked records a message Send accepted; full says Send found
// the flight full and went on (FlightNotify). Caller holds p.mu.
func (p *Publisher) flightSentLocked(size int, full bool) {
	p.flight.push(size, p.flight.now())
	if full && !p.flight.over {
		p.flight.over = true
		p.queueLocked(FlightEvent{State: FlightOver, InFlight: p.flight.len(), InFlightBytes: p.flight.bytes})
	}
}

// settleFlightLocked takes what became stable out of the flight and, once
// a full flight is no longer full, reports FlightUnder. Caller holds p.mu.
func (p *Publisher) settleFlightLocked() {
	p.flight.settle(p.tracker.Stable())
	if p.flight.over && !p.flight.full(p.flight.len(), 0, &p.cfg) {
		p.flight.over = false
		p.queueLocked(FlightEvent{State: FlightUnder, InFlight: p.flight.len(), InFlightBytes: p.flight.bytes})
	}
}
