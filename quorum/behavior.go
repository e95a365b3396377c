package quorum

import (
	"errors"
	"fmt"
)

// Sentinel errors of the parsers, testable with errors.Is.
var (
	// ErrUnknownBehavior means a stability behaviour name is not one this
	// package knows; the wrapping error names the accepted values.
	ErrUnknownBehavior = errors.New("quorum: unknown stability behaviour")
	// ErrUnsupported means the name is a known stability behaviour that is
	// not implemented at that level. Every behaviour is implemented now;
	// it stays for callers that test for it.
	ErrUnsupported = errors.New("quorum: stability behaviour not supported yet")
)

// Behavior is an intergroup stability behaviour: how many store groups must
// confirm a sequence number before the publisher may treat it as stable.
// The zero value is Any, the default.
type Behavior int

// The intergroup stability behaviours. See the package documentation for
// what each one requires.
const (
	// Any needs one confirming group.
	Any Behavior = iota
	// Majority needs N/2+1 of the N configured groups.
	Majority
	// AllActive needs every currently active group, and at least one.
	AllActive
	// All needs every configured group.
	All
)

// behaviorNames maps each Behavior to its configuration name; the order of
// the slice is the order of the constants.
var behaviorNames = [...]string{
	Any:       "any",
	Majority:  "majority",
	AllActive: "all-active",
	All:       "all",
}

// behaviorAliases are Ultra Messaging's other spellings of the intergroup
// behaviours (ume_retention_intergroup_stability_behavior): a UM
// configuration's values work unchanged. String gives the short names.
var behaviorAliases = map[string]Behavior{
	"any-group":  Any,
	"all-groups": All,
}

// acceptedBehaviors lists the names ParseBehavior accepts, for messages.
// The aliases are left out: they are for UM configurations, not for
// people choosing a value.
const acceptedBehaviors = `"any", "majority", "all-active" or "all"`

// ParseBehavior returns the intergroup behaviour named s, one of "any",
// "majority", "all-active" or "all", or UM's aliases "any-group" (Any) and
// "all-groups" (All) (exact, lower case). Any other string,
// including the empty one, yields an error wrapping ErrUnknownBehavior that
// lists the accepted names; callers wanting the default for an unset value
// should use Any (the zero value) rather than parse "".
func ParseBehavior(s string) (Behavior, error) {
	for b, name := range behaviorNames {
		if s == name {
			return Behavior(b), nil
		}
	}
	if b, ok := behaviorAliases[s]; ok {
		return b, nil
	}
	return Any, fmt.Errorf("%w %q for intergroup stability (want %s)",
		ErrUnknownBehavior, s, acceptedBehaviors)
}

// String returns the configuration name of b, as accepted by ParseBehavior,
// or "Behavior(n)" for a value outside the defined constants.
func (b Behavior) String() string {
	if b >= 0 && int(b) < len(behaviorNames) {
		return behaviorNames[b]
	}
	return fmt.Sprintf("Behavior(%d)", int(b))
}

// MarshalText encodes b as its configuration name, so a Behavior can sit in
// a YAML or JSON configuration struct. It fails for an undefined value.
func (b Behavior) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(behaviorNames) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownBehavior, b)
	}
	return []byte(behaviorNames[b]), nil
}

// UnmarshalText decodes a configuration name with ParseBehavior. On error b
// is left unchanged.
func (b *Behavior) UnmarshalText(text []byte) error {
	v, err := ParseBehavior(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
