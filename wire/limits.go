package wire

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// MaxPayload is the largest message payload the protocol carries. A Publish
// frame holding one such payload, and a FetchReply or Deliver frame serving
// it back, each fit in DefaultMaxFrame: the difference (frameReserve) is
// room for the frame's other fields, a source name of the longest allowed
// length included, with a wide margin. Publishers refuse a larger payload
// before giving it a sequence number, and stores refuse to store one, since
// no client could read it back.
const MaxPayload = DefaultMaxFrame - frameReserve

// frameReserve is what a frame carrying one payload needs besides the
// payload: a few hundred bytes, rounded up generously.
const frameReserve = 64 << 10

// ReadTimed reads the next frame as Read does, within two time bounds. The
// frame must begin (its first byte arrive) before idleBy; the zero time
// means no bound. Once begun, the whole frame must arrive within frame; 0
// means no bound. A frame not begun in time returns an error wrapping
// ErrIdle, with the stream intact; a frame begun but not finished in time
// returns one wrapping ErrSlowFrame, with the stream unusable.
//
// ReadTimed sets the connection's read deadline; a caller mixing it with
// Read sets its own deadline for Read.
func (c *Conn) ReadTimed(idleBy time.Time, frame time.Duration) (Message, error) {
	if c.r.Buffered() == 0 {
		_ = c.nc.SetReadDeadline(idleBy)
		if _, err := c.r.Peek(1); err != nil {
			if isTimeout(err) {
				return nil, fmt.Errorf("%w: %w", ErrIdle, err)
			}
			return nil, err
		}
	}
	var deadline time.Time
	if frame > 0 {
		deadline = time.Now().Add(frame)
	}
	_ = c.nc.SetReadDeadline(deadline)
	m, err := c.Read()
	if err != nil && isTimeout(err) {
		return nil, fmt.Errorf("%w (%v): %w", ErrSlowFrame, frame, err)
	}
	return m, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
