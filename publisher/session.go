package publisher

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
)

// MaxSessionID is the largest UM session ID (ume_session_id).
const MaxSessionID = math.MaxUint64 - 1

// checkSession refuses more than one way of naming the session, and a
// session ID UM would not accept.
func (c *Config) checkSession() error {
	set := 0
	for _, on := range []bool{c.Session != "", c.RegID != 0, c.SessionID != 0} {
		if on {
			set++
		}
	}
	if set > 1 {
		return fmt.Errorf("%w: set at most one of Session, RegID and SessionID (each names the publisher's registration)", ErrConfig)
	}
	if c.SessionID > MaxSessionID {
		return fmt.Errorf("%w: SessionID 0x%x is above the largest UM session ID, 0x%x", ErrConfig, c.SessionID, uint64(MaxSessionID))
	}
	return nil
}

// session returns the session the publisher registers as (see
// Config.Session, RegID and SessionID).
func (c *Config) session() string {
	switch {
	case c.Session != "":
		return c.Session
	case c.RegID != 0:
		return fmt.Sprintf("regid:%d", c.RegID)
	case c.SessionID != 0:
		return fmt.Sprintf("session-id:0x%016x", c.SessionID)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Session returns the session this publisher registered as: a static one
// (Config.Session, RegID, SessionID) or the random one it picked.
func (p *Publisher) Session() string { return p.cfg.Session }
