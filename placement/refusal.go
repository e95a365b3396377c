package placement

import "errors"

// Sentinel errors for the reasons [Plan] refuses a request. A [*Refusal]
// matches exactly one of them with [errors.Is].
var (
	// ErrInvalidRequest: the request itself is malformed (a missing or
	// repeated host name, an unusable address, a negative count...).
	ErrInvalidRequest = errors.New("invalid placement request")
	// ErrTooFewHosts: fewer than two hosts, so losing one host loses every
	// store.
	ErrTooFewHosts = errors.New("too few hosts")
	// ErrTooFewStores: fewer than three stores per group.
	ErrTooFewStores = errors.New("fewer than 3 stores per group")
	// ErrEvenGroupSize: an even number of stores per group.
	ErrEvenGroupSize = errors.New("even number of stores per group")
	// ErrNoSurvivingGroup: some single host holds a quorum of every group,
	// so losing it stops publishing.
	ErrNoSurvivingGroup = errors.New("losing one host leaves no group with a quorum")
	// ErrPortRange: the port numbering does not fit in 1..65535, or there
	// are more groups or stores than it can number.
	ErrPortRange = errors.New("ports out of range")
)

// Refusal is the error [Plan] returns for a request it will not lay out. It
// says briefly what is wrong (Reason) and, for people, why it matters and
// what to ask for instead (Explanation). Code is a stable identifier for
// scripts and tests, such as "too-few-stores".
type Refusal struct {
	Code        string `json:"code"`
	Reason      string `json:"reason"`
	Explanation string `json:"explanation"`

	kind error
}

// Error returns the short reason.
func (r *Refusal) Error() string { return "refused: " + r.Reason }

// Unwrap returns the sentinel error for the kind of refusal, so that
// errors.Is(err, ErrTooFewStores) and the like work.
func (r *Refusal) Unwrap() error { return r.kind }

func refuse(kind error, code, reason, explanation string) *Refusal {
	return &Refusal{Code: code, Reason: reason, Explanation: explanation, kind: kind}
}
