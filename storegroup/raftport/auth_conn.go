package raftport

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// idleConn is an accepted raft connection that is closed when nothing
// arrives for idle: each Read (and Write) waits at most that long. raft's
// handler reads through a large buffer, so this costs one deadline update
// per buffer fill, not per entry. An idle cut reads as the end of the
// stream, which raft's handler takes quietly, as when a peer hangs up: it
// is the normal end of a connection raft's pool no longer used.
type idleConn struct {
	net.Conn
	idle time.Duration
	log  *slog.Logger
}

func (c *idleConn) Read(p []byte) (int, error) {
	if c.idle > 0 {
		if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.Debug("raft port: closed a connection on which nothing arrived for the idle timeout (its dialer opens a new one when it needs it)", "remote", c.RemoteAddr().String(), "idle", c.idle)
		c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	if c.idle > 0 {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// dialedConn is the dialing end of a raft connection. raft keeps idle
// connections in a pool (and a pipeline's connection is idle whenever
// nothing is being replicated); the acceptor closes one on which nothing
// arrived for its idle timeout. So when raft starts writing on a
// connection after quiet or more without writing, dialedConn first
// replaces it with a fresh, authenticated one and closes the old: raft
// never writes into a connection the other end has dropped.
//
// Replacing is safe only between two requests, with no answer
// outstanding: raft reads a connection only while it waits for an answer,
// so a connection is replaced only when no Read is in progress (and
// raft's requests time out after its transport's Timeout, 10 s, far below
// quiet). The last deadlines raft set are carried over to the new
// connection.
type dialedConn struct {
	redial func() (net.Conn, error)
	quiet  time.Duration // 0: never replace

	mu        sync.Mutex
	c         net.Conn
	lastWrite time.Time
	readDL    time.Time
	writeDL   time.Time
	reading   int // Reads in progress
	closed    bool
}

func newDialedConn(c net.Conn, quiet time.Duration, redial func() (net.Conn, error)) *dialedConn {
	return &dialedConn{c: c, quiet: quiet, redial: redial, lastWrite: time.Now()}
}

// current is the connection in use.
func (d *dialedConn) current() net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c
}

func (d *dialedConn) Write(p []byte) (int, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return 0, net.ErrClosed
	}
	now := time.Now()
	if d.quiet > 0 && d.reading == 0 && now.Sub(d.lastWrite) >= d.quiet {
		nc, err := d.redial()
		if err != nil {
			d.mu.Unlock()
			return 0, err
		}
		_ = nc.SetReadDeadline(d.readDL)
		_ = nc.SetWriteDeadline(d.writeDL)
		old := d.c
		d.c = nc
		old.Close()
	}
	d.lastWrite = now
	c := d.c
	d.mu.Unlock()
	return c.Write(p)
}

func (d *dialedConn) Read(p []byte) (int, error) {
	d.mu.Lock()
	d.reading++
	c := d.c
	d.mu.Unlock()
	n, err := c.Read(p)
	d.mu.Lock()
	d.reading--
	d.mu.Unlock()
	return n, err
}

func (d *dialedConn) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return d.c.Close()
}

func (d *dialedConn) LocalAddr() net.Addr  { return d.current().LocalAddr() }
func (d *dialedConn) RemoteAddr() net.Addr { return d.current().RemoteAddr() }

func (d *dialedConn) SetDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.readDL, d.writeDL = t, t
	return d.c.SetDeadline(t)
}

func (d *dialedConn) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.readDL = t
	return d.c.SetReadDeadline(t)
}

func (d *dialedConn) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writeDL = t
	return d.c.SetWriteDeadline(t)
}
