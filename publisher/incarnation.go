package publisher

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode"
)

// incarnation chooses this publisher's session identity and epoch and
// returns the session it registers with, "IDENTITY#EPOCH". The identity is
// Config.Session (or RegID, SessionID), else the state file's, else a new random one (kept in
// the state file when there is one). The epoch is above the state file's
// last one and at least the current time in nanoseconds, so it grows
// across restarts with or without a state file; with a state file it is
// written (durably) before the publisher registers, so a crash right after
// registering still leaves the next incarnation a higher one.
func (p *Publisher) incarnation() (string, error) {
	id := p.cfg.staticIdentity()
	if id == "" && p.state != nil {
		id = p.state.Session
	}
	if id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	epoch := uint64(time.Now().UnixNano())
	if p.state != nil {
		epoch = max(epoch, p.state.Epoch+1)
		p.state.Session, p.state.Epoch = id, epoch
		if err := p.state.write(p.cfg.StateFile); err != nil {
			return "", fmt.Errorf("record this publisher's incarnation: %w", err)
		}
	}
	p.identity = id
	return id + "#" + strconv.FormatUint(epoch, 10), nil
}

// Session returns the session this publisher registered with: its
// identity and this incarnation's epoch, "IDENTITY#EPOCH".
func (p *Publisher) Session() string { return p.session }

// printableIdentity reports whether s may be a session identity: 1 to 128
// printable characters.
func printableIdentity(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
