package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// copyFloor is what moving a store's bytes costs on this machine with no
// work of a store's own: a file of mib MiB, its pages first dropped from the
// page cache (as a log the stores no longer keep cached), read in 1 MiB
// preads, sent over loopback TCP from 127.0.0.2 to 127.0.0.4, received and
// written to a new file, one fdatasync; timed from the first read to the
// sync. A catch-up does all of this and more (checks, decoding, the
// repository's B-tree, raft's framing), so this bounds what the catch-up
// goal can reach here. Returns MB/s (10^6 bytes).
func copyFloor(dir string, block []byte, mib int) (float64, error) {
	src, err := os.CreateTemp(dir, "copyfloor-src-")
	if err != nil {
		return 0, fmt.Errorf("copy floor: %w", err)
	}
	defer os.Remove(src.Name())
	defer src.Close()
	for i := 0; i < mib; i++ {
		if _, err := src.Write(block); err != nil {
			return 0, fmt.Errorf("copy floor: %w", err)
		}
	}
	if err := src.Sync(); err != nil {
		return 0, fmt.Errorf("copy floor: %w", err)
	}
	_ = unix.Fadvise(int(src.Fd()), 0, 0, unix.FADV_DONTNEED)

	ln, err := net.Listen("tcp", "127.0.0.4:0")
	if err != nil {
		return 0, fmt.Errorf("copy floor: %w", err)
	}
	defer ln.Close()
	received := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- err
			return
		}
		defer c.Close()
		dst, err := os.CreateTemp(dir, "copyfloor-dst-")
		if err != nil {
			received <- err
			return
		}
		defer os.Remove(dst.Name())
		defer dst.Close()
		if _, err := io.CopyBuffer(dst, c, make([]byte, len(block))); err != nil {
			received <- err
			return
		}
		received <- syscall.Fdatasync(int(dst.Fd()))
	}()
	start := time.Now()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("copy floor: %w", err)
	}
	buf := make([]byte, len(block))
	for i := 0; i < mib; i++ {
		n, err := src.ReadAt(buf, int64(i)*int64(len(buf)))
		if err != nil && !(err == io.EOF && n == len(buf)) {
			c.Close()
			return 0, fmt.Errorf("copy floor: %w", err)
		}
		if _, err := c.Write(buf[:n]); err != nil {
			c.Close()
			return 0, fmt.Errorf("copy floor: %w", err)
		}
	}
	c.Close()
	if err := <-received; err != nil {
		return 0, fmt.Errorf("copy floor: %w", err)
	}
	return float64(mib) * float64(len(block)) / time.Since(start).Seconds() / 1e6, nil
}
