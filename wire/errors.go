package wire

import "errors"

// Sentinel errors, testable with errors.Is.
var (
	// ErrFrameTooLarge means a frame's length exceeds the maximum frame size.
	// The connection cannot be resynchronised and must be closed.
	ErrFrameTooLarge = errors.New("wire: frame exceeds the maximum frame size")
	// ErrUnknownType means the frame's type byte names no message of this
	// protocol version.
	ErrUnknownType = errors.New("wire: unknown frame type")
	// ErrMalformed means the frame's body does not decode as its type says.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrVersion means the peer speaks a protocol version this side does not.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrUnauthorized means the store refused the client's token.
	ErrUnauthorized = errors.New("wire: not authorised: wrong or missing token")
	// ErrTLSRefused means TLS with the store failed on a certificate: the
	// store's was not trusted, or the store refused the client's (or its
	// lack of one). Every store of a deployment checks the same CA, so
	// trying another store, or again, does not help.
	ErrTLSRefused = errors.New("wire: TLS certificate refused")
	// ErrIdle means no frame began before ReadTimed's idle deadline. The
	// stream is intact: the reader may wait again or close the connection.
	ErrIdle = errors.New("wire: no frame arrived before the idle deadline")
	// ErrSlowFrame means a frame had begun but did not arrive whole within
	// ReadTimed's frame bound. The stream cannot be resynchronised.
	ErrSlowFrame = errors.New("wire: a frame did not arrive within its time bound")
)
