package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// DefaultMaxFrame is the default bound on a frame's length: large enough for
// a publish batch of a thousand 16 KiB messages, small enough that a bad
// length cannot exhaust memory.
const DefaultMaxFrame = 16 << 20

// headerLen is the length prefix.
const headerLen = 4

// Encode returns the complete frame (length, type, body) for m.
func Encode(m Message) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeTo(&b, m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var encPool = sync.Pool{New: func() any {
	e := msgpack.NewEncoder(nil)
	e.UseCompactInts(true)
	return e
}}

// encodeTo appends m's frame to b.
func encodeTo(b *bytes.Buffer, m Message) error {
	start := b.Len()
	b.Write([]byte{0, 0, 0, 0, byte(m.Type())})
	enc := encPool.Get().(*msgpack.Encoder)
	enc.Reset(b)
	err := enc.Encode(m)
	enc.Reset(nil)
	encPool.Put(enc)
	if err != nil {
		b.Truncate(start)
		return fmt.Errorf("wire: encode %T: %w", m, err)
	}
	n := b.Len() - start - headerLen
	binary.BigEndian.PutUint32(b.Bytes()[start:], uint32(n))
	return nil
}

// Decode decodes one frame body: the type byte followed by the msgpack body
// (the frame without its length prefix). It never panics on bad input. A
// message array longer than this version's (fields appended by a newer
// peer) or shorter (an older peer's) decodes too: the extra fields are
// ignored, the missing ones are zero (evolve.go).
func Decode(frame []byte) (Message, error) {
	if len(frame) < 1 {
		return nil, fmt.Errorf("%w: empty frame", ErrMalformed)
	}
	t := Type(frame[0])
	m := newMessage(t)
	if m == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownType, frame[0])
	}
	if err := checkBody(frame[1:]); err != nil {
		return nil, fmt.Errorf("type %d: %w", t, err)
	}
	body, err := conform(frame[1:], shapes[t])
	if err != nil {
		return nil, fmt.Errorf("type %d: %w", t, err)
	}
	if err := msgpack.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("%w: type %d: %v", ErrMalformed, t, err)
	}
	return m, nil
}

// Conn is a framed protocol connection. One goroutine may Read while
// another writes; writers are serialised by Conn itself. Written frames are
// buffered until Flush, so a sender can put many frames in one TCP write.
type Conn struct {
	nc       net.Conn
	r        *bufio.Reader
	maxFrame int
	rbuf     []byte

	// Writers append to wbuf under wmu; Flush swaps it with out under
	// fmu and writes out without wmu, so a frame written during a slow
	// network write waits only for the encoding of others, and joins the
	// next Flush.
	wmu  sync.Mutex
	wbuf *bytes.Buffer
	fmu  sync.Mutex
	out  *bytes.Buffer
}

// NewConn wraps nc. maxFrame <= 0 means DefaultMaxFrame.
func NewConn(nc net.Conn, maxFrame int) *Conn {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), maxFrame: maxFrame, wbuf: new(bytes.Buffer), out: new(bytes.Buffer)}
}

// NetConn returns the underlying connection (for deadlines and addresses).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Read reads and decodes the next frame. An error wrapping ErrFrameTooLarge
// or an I/O error leaves the stream unusable; ErrUnknownType and
// ErrMalformed leave it positioned at the next frame, so a server can answer
// with an Error and go on.
func (c *Conn) Read() (Message, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > c.maxFrame || n < 0 {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, c.maxFrame)
	}
	buf, err := c.readBody(n)
	if err != nil {
		return nil, err
	}
	m, err := Decode(buf)
	if cap(c.rbuf) > 1<<20 {
		c.rbuf = nil // do not pin a large buffer for an idle connection
	}
	return m, err
}

// readChunk is how much of a frame's body Read allocates ahead of the bytes
// that have arrived: a peer that announces a 16 MiB frame and then sends
// nothing holds 64 KiB, not 16 MiB.
const readChunk = 64 << 10

// readBody reads a body of n bytes into c.rbuf, growing the buffer only as
// the bytes arrive.
func (c *Conn) readBody(n int) ([]byte, error) {
	buf := c.rbuf[:0]
	for len(buf) < n {
		want := min(n-len(buf), readChunk)
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), len(buf)+want)))
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(c.r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	c.rbuf = buf
	return buf, nil
}

// Write buffers m; call Flush to send.
func (c *Conn) Write(m Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return encodeTo(c.wbuf, m)
}

// Buffered reports how many bytes are waiting for Flush.
func (c *Conn) Buffered() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.wbuf.Len()
}

// Flush sends every frame written before it.
func (c *Conn) Flush() error {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	c.wmu.Lock()
	c.wbuf, c.out = c.out, c.wbuf
	c.wmu.Unlock()
	if c.out.Len() == 0 {
		return nil
	}
	_, err := c.nc.Write(c.out.Bytes())
	c.out.Reset()
	if c.out.Cap() > 4<<20 {
		c.out = new(bytes.Buffer)
	}
	return err
}

// Send writes m and flushes.
func (c *Conn) Send(m Message) error {
	if err := c.Write(m); err != nil {
		return err
	}
	return c.Flush()
}

// SetDeadline, SetReadDeadline and SetWriteDeadline set the underlying
// connection's deadlines (FrameConn).
func (c *Conn) SetDeadline(t time.Time) error      { return c.nc.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.nc.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }
