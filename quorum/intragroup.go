package quorum

import "fmt"

// Intragroup is an intragroup stability behaviour: which members of one
// store group must hold a message durably before the group confirms it to
// its publisher (UM's ume_retention_intragroup_stability_behavior). The
// zero value is IntragroupQuorum, the default.
//
// A group is a Raft cluster, and its leader confirms for the whole group,
// so "holds durably" means "has the entry in its fsynced Raft log". The
// behaviours are ordered from the weakest to the strictest, so the
// stricter of two is their max.
type Intragroup int

// The intragroup stability behaviours.
const (
	// IntragroupQuorum: a majority of the group's members hold the message,
	// which is exactly the group's Raft commit ("quorum").
	IntragroupQuorum Intragroup = iota
	// IntragroupAllActive: every running member holds it, and never fewer
	// than a majority ("all-active"). A member is running while the leader
	// hears from it; one that stops answering stops counting, so a member
	// down delays confirmations only until it is seen to be down, while a
	// member that answers but is slow makes every confirmation wait for it.
	IntragroupAllActive
	// IntragroupAll: every member of the group holds it ("all", UM also
	// "all-stores"). With a member down, the group confirms nothing until
	// it is back: under intergroup "any" another group may still make the
	// message stable.
	IntragroupAll
)

var intragroupNames = [...]string{
	IntragroupQuorum:    "quorum",
	IntragroupAllActive: "all-active",
	IntragroupAll:       "all",
}

// intragroupAliases are UM's other spellings.
var intragroupAliases = map[string]Intragroup{"all-stores": IntragroupAll}

// ParseIntragroupBehavior returns the intragroup behaviour named s:
// "quorum", "all-active" or "all", or UM's alias "all-stores" (exact, lower
// case). Any other string, the empty one included, yields an error wrapping
// ErrUnknownBehavior; callers wanting the default for an unset value use
// IntragroupQuorum, the zero value.
func ParseIntragroupBehavior(s string) (Intragroup, error) {
	for b, name := range intragroupNames {
		if s == name {
			return Intragroup(b), nil
		}
	}
	if b, ok := intragroupAliases[s]; ok {
		return b, nil
	}
	return IntragroupQuorum, fmt.Errorf("%w %q for intragroup stability (want \"quorum\", \"all-active\" or \"all\")", ErrUnknownBehavior, s)
}

// ParseIntragroup checks an intragroup stability behaviour name, as
// ParseIntragroupBehavior reads it.
func ParseIntragroup(s string) error {
	_, err := ParseIntragroupBehavior(s)
	return err
}

// String returns the configuration name of b, or "Intragroup(n)" for a
// value outside the defined constants.
func (b Intragroup) String() string {
	if b >= 0 && int(b) < len(intragroupNames) {
		return intragroupNames[b]
	}
	return fmt.Sprintf("Intragroup(%d)", int(b))
}

// MarshalText encodes b as its configuration name; it fails for an
// undefined value.
func (b Intragroup) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(intragroupNames) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownBehavior, b)
	}
	return []byte(intragroupNames[b]), nil
}

// UnmarshalText decodes a configuration name with ParseIntragroupBehavior.
// On error b is left unchanged.
func (b *Intragroup) UnmarshalText(text []byte) error {
	v, err := ParseIntragroupBehavior(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Member is what the intragroup rule knows of one store of a group about
// one message: whether it is running (its group's leader heard from it
// recently) and whether it holds the message durably. A group's leader is
// a running member holding every message it confirms.
type Member struct {
	Running bool
	Holds   bool
}

// Met reports whether the members (every store of the group, the leader
// included) are enough under b for the group to confirm the message. It is
// the one statement of the intragroup rule; Needed says the same in counts.
func (b Intragroup) Met(members []Member) bool {
	holding := 0
	for _, m := range members {
		if m.Holds {
			holding++
		}
	}
	if holding < len(members)/2+1 {
		return false // never fewer than a majority: the Raft commit
	}
	for _, m := range members {
		switch b {
		case IntragroupAll:
			if !m.Holds {
				return false
			}
		case IntragroupAllActive:
			if m.Running && !m.Holds {
				return false
			}
		}
	}
	return true
}

// Needed returns how many of a group's members must hold a message under
// b, when running of them are running: a majority under quorum, every
// running one (at least a majority) under all-active, every one under all.
// A group whose running members are fewer than Needed confirms nothing.
func (b Intragroup) Needed(members, running int) int {
	majority := members/2 + 1
	switch b {
	case IntragroupAllActive:
		return max(running, majority)
	case IntragroupAll:
		return members
	default:
		return majority
	}
}

// Confirms reports whether a group of members stores, running of them
// running, can still confirm new messages under b.
func (b Intragroup) Confirms(members, running int) bool {
	return running >= b.Needed(members, running)
}

// NeededText says in words what b needs of a group of members stores, for
// messages and status pages: "2 of 3", "every running store, at least 2 of
// 3", "all 3".
func (b Intragroup) NeededText(members int) string {
	majority := members/2 + 1
	switch b {
	case IntragroupAllActive:
		return fmt.Sprintf("every running store, at least %d of %d", majority, members)
	case IntragroupAll:
		return fmt.Sprintf("all %d", members)
	default:
		return fmt.Sprintf("%d of %d", majority, members)
	}
}
