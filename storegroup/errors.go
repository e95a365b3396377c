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

	// ErrFilesMarkedDamaged says a store that stopped itself found damage
	// in its files while it ran and marked them (damaged.json): starting it
	// again moves them to a numbered backup and it rejoins its group empty,
	// through the staged join. The host daemon does that by itself
	// (storehost), a bounded number of times.
	ErrFilesMarkedDamaged = errors.New("its files are marked damaged")

	// ErrNoStoreWithState is why an empty store refuses to start its group:
	// every member of the group is empty although the group existed (another
	// group remembers its identity), and bootstrapping it again would
	// silently start from nothing (SPEC §4 rule 3). It is placement's
	// sentinel, not a copy, so errors.Is matches the refusal of a store and
	// that of a restart plan alike.
	ErrNoStoreWithState = placement.ErrNoStoreWithState
)
