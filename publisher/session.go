package publisher

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MaxSessionID is the largest UM session ID (ume_session_id).
const MaxSessionID = math.MaxUint64 - 1

// checkSession refuses more than one way of naming the session, and a
// session ID UM would not accept.
func (c *Config) checkSession() error {
	set := 0
	for _, on := range []bool{c.Session != "", c.RegID != 0, len(c.StoreRegIDs) > 0, c.SessionID != 0} {
		if on {
			set++
		}
	}
	if set > 1 {
		return fmt.Errorf("%w: set at most one of Session, RegID, StoreRegIDs and SessionID (each names the publisher's registration)", ErrConfig)
	}
	if len(c.StoreRegIDs) > 0 && len(c.StoreRegIDs) != len(c.Groups) {
		return fmt.Errorf("%w: StoreRegIDs gives RegIDs for %d groups, and Groups lists %d", ErrConfig, len(c.StoreRegIDs), len(c.Groups))
	}
	for g, ids := range c.StoreRegIDs {
		if len(ids) != len(c.Groups[g]) {
			return fmt.Errorf("%w: StoreRegIDs gives group %d %d RegIDs for its %d stores", ErrConfig, g+1, len(ids), len(c.Groups[g]))
		}
		if slices.Contains(ids, 0) {
			return fmt.Errorf("%w: StoreRegIDs: group %d has a RegID 0 among static ones: give every store a RegID, or none", ErrConfig, g+1)
		}
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
	case len(c.StoreRegIDs) > 0:
		return storeRegIDsSession(c.StoreRegIDs)
	case c.SessionID != 0:
		return fmt.Sprintf("session-id:0x%016x", c.SessionID)
	}
	return ""
}

// storeRegIDsSession is the session of a publisher given a RegID per
// store: "regids:" and 16 hex digits of a SHA-256 over each group's
// RegIDs, sorted (a set: the group's stores are one replicated store, and
// the order a list gives them in says nothing), groups in order. It is
// short because every Publish entry of the group's log names it.
func storeRegIDsSession(groups [][]uint32) string {
	var b strings.Builder
	for _, ids := range groups {
		sorted := slices.Clone(ids)
		slices.Sort(sorted)
		for _, id := range sorted {
			fmt.Fprintf(&b, "%d,", id)
		}
		b.WriteString(";")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "regids:" + hex.EncodeToString(sum[:8])
}
