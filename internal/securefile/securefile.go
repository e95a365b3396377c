// Package securefile reads the small files a client or daemon trusts: tokens
// and TLS PEM files named by the deployment file or by flags. Each is read
// only if it is a regular file within a bound, so a wrong path (a device such
// as /dev/zero, a FIFO, a directory, a log, a private key where a token was
// meant) is a clear error at once, naming the file, rather than a process
// that reads without end or a secret sent to every host.
package securefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxToken bounds a token file (client and operator tokens): one line of
// at most 4 KiB.
const MaxToken = 4 << 10

// MaxPEM bounds a TLS PEM file (CA, certificate, key): 1 MiB, far more
// than any certificate chain.
const MaxPEM = 1 << 20

// ErrNotRegular means the path names something other than a regular file
// (or a symbolic link to one): a device, a FIFO, a socket, a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge means a file is larger than the bound for its kind.
var ErrTooLarge = errors.New("file too large")

// ErrNotOneLine means a token file holds more than one line.
var ErrNotOneLine = errors.New("token file is not one line")

// Read returns the contents of the regular file at path, refusing anything
// else and a file larger than limit bytes. what names the file's role in
// errors ("the token file (security.token-file or --token-file)").
//
// The file is opened without blocking (a FIFO with no writer would
// otherwise hang the open) and checked through the open descriptor, so the
// file checked is the file read; at most limit+1 bytes are ever read.
func Read(path, what string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is %s, %w: name a regular file there", what, path, kind(st.Mode()), ErrNotRegular)
	}
	tooLarge := func() error {
		return fmt.Errorf("%s %s is larger than %d bytes (%w): is it the file you meant?", what, path, limit, ErrTooLarge)
	}
	if st.Size() > limit {
		return nil, tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge()
	}
	return data, nil
}

// ReadToken returns the token in the file at path: one line of at most
// MaxToken bytes, surrounding white space removed. A file of several lines
// (a PEM key, a log, a config file) or an empty one is refused, so a file
// the operator did not mean is never sent as a token.
func ReadToken(path, what string) (string, error) {
	data, err := Read(path, what, MaxToken)
	if err != nil {
		return "", err
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", fmt.Errorf("%s %s is empty: write the token there, one line", what, path)
	}
	if bytes.ContainsAny(data, "\r\n") {
		return "", fmt.Errorf("%s %s holds several lines (%w): a token is one line; is it the file you meant?", what, path, ErrNotOneLine)
	}
	return string(data), nil
}

// ReadPEM returns the contents of a TLS PEM file (at most MaxPEM bytes).
func ReadPEM(path, what string) ([]byte, error) {
	return Read(path, what, MaxPEM)
}

// kind names a file mode that is not a regular file.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "something else"
	}
}
