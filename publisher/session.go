package publisher

import (
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

// staticIdentity returns the session identity Config names: Session, or
// one made of RegID or SessionID; "" when none is set (the state file's
// identity, or a random one, is used then: incarnation.go).
func (c *Config) staticIdentity() string {
	switch {
	case c.Session != "":
		return c.Session
	case c.RegID != 0:
		return fmt.Sprintf("regid:%d", c.RegID)
	case c.SessionID != 0:
		return fmt.Sprintf("session-id:0x%016x", c.SessionID)
	}
	return ""
}
