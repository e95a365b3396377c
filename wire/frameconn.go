package wire

import "time"

// FrameConn is what a client session needs of its connection to a store:
// frames in and out, deadlines, close. A *Conn is one; so is a session
// carried with others over one shared connection (internal/connmux), whose
// Close ends that session only.
type FrameConn interface {
	// Read returns the next frame for this session (Conn.Read).
	Read() (Message, error)
	// Write buffers a frame; Flush sends what was written.
	Write(Message) error
	Flush() error
	// Send is Write and Flush.
	Send(Message) error
	// Buffered is how many bytes wait for Flush.
	Buffered() int
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	Close() error
}

var _ FrameConn = (*Conn)(nil)
