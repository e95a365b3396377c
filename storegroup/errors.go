package storegroup

import (
	"errors"

	"umstore/placement"
)

// Errors a store reports. Configuration errors wrap ErrConfig (config.go).
var (
	// ErrStoreFailed is the response to entries a store could not apply:
	// the store has stopped itself rather than skip an entry (SPEC §4
	// rule 6).
	ErrStoreFailed = errors.New("store stopped: cannot durably apply committed entries")

	// ErrNoStoreWithState is why an empty store refuses to start its group:
	// every member of the group is empty although the group existed (another
	// group remembers its identity), and bootstrapping it again would
	// silently start from nothing (SPEC §4 rule 3). It is placement's
	// sentinel, not a copy, so errors.Is matches the refusal of a store and
	// that of a restart plan alike.
	ErrNoStoreWithState = placement.ErrNoStoreWithState
)
