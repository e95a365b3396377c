package clientperm

import (
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrForbidden marks a request an identity may not make; the error's text
// names the identity and the permission.
var ErrForbidden = errors.New("forbidden")

// refusal is a permission's refusal: its text alone, wrapping
// ErrForbidden.
func refusal(format string, args ...any) error {
	return forbiddenError(fmt.Sprintf(format, args...))
}

type forbiddenError string

func (e forbiddenError) Error() string { return string(e) }
func (e forbiddenError) Unwrap() error { return ErrForbidden }

// Identity is one client of the deployment: its name, how it is known
// (its own token, or the name in its TLS certificate), and the names it
// may use. A nil *Identity is the deployment's own (the shared token, or
// no identities at all): it may do everything.
type Identity struct {
	Name    string
	Token   string // the token it presents in its Hello; "" when known by TLSName
	TLSName string // its certificate's Subject CN or a DNS SAN; "" when known by Token
	// Publish: the sources it may register and publish.
	Publish []Pattern
	// Receive: the sources it may fetch, subscribe to and list.
	Receive []Pattern
	// Receivers: the durable receiver names it may register and consume as.
	Receivers []Pattern
}

// MayPublish returns nil if id may publish source, else an error wrapping
// ErrForbidden that names id and the permission.
func (id *Identity) MayPublish(source string) error {
	if id == nil || anyMatch(id.Publish, source) {
		return nil
	}
	return refusal("identity %q may not publish source %q (its publish patterns: %s)", id.Name, source, join(id.Publish))
}

// MayReceive returns nil if id may receive source, else an error wrapping
// ErrForbidden that names id and the permission.
func (id *Identity) MayReceive(source string) error {
	if id == nil || anyMatch(id.Receive, source) {
		return nil
	}
	return refusal("identity %q may not receive source %q (its receive patterns: %s)", id.Name, source, join(id.Receive))
}

// MayUseReceiver returns nil if id may register and consume as the
// durable receiver name, else an error wrapping ErrForbidden that names
// id and the permission.
func (id *Identity) MayUseReceiver(name string) error {
	if id == nil || anyMatch(id.Receivers, name) {
		return nil
	}
	return refusal("identity %q may not use receiver name %q (its receiver patterns: %s)", id.Name, name, join(id.Receivers))
}

// MayStop returns nil if id may stop stores (a Shutdown) in a deployment
// without an operator token, where the client token decides: only the
// deployment's own identity may, never a client's.
func (id *Identity) MayStop() error {
	if id == nil {
		return nil
	}
	return refusal("identity %q may not stop stores: only the deployment's own token may (or the operator token, security.operator-token-file, when the deployment has one)", id.Name)
}

// MaySee reports whether id may learn that source exists (a Sources
// list): it may publish or receive it.
func (id *Identity) MaySee(source string) bool {
	return id == nil || anyMatch(id.Publish, source) || anyMatch(id.Receive, source)
}

// Set is a deployment's client identities. A nil *Set means none are
// configured: the shared token alone admits clients, to everything.
type Set struct {
	ids []*Identity
}

// NewSet checks ids and returns them as a Set: every identity named, the
// names distinct, each known by exactly one of a token or a TLS name, no
// two with the same token or TLS name (a token must name one identity),
// and no token equal to the deployment's own (deploymentToken, which
// admits the stores and operators to everything).
func NewSet(ids []Identity, deploymentToken string) (*Set, error) {
	s := &Set{}
	names := map[string]bool{}
	tokens := map[string]string{}
	tlsNames := map[string]string{}
	for i := range ids {
		id := ids[i]
		switch {
		case id.Name == "":
			return nil, fmt.Errorf("client identity %d has no name: give each a name, which refusals and logs show", i+1)
		case names[id.Name]:
			return nil, fmt.Errorf("two client identities are named %q: give each its own name", id.Name)
		case (id.Token == "") == (id.TLSName == ""):
			return nil, fmt.Errorf("client identity %q needs exactly one of a token file or a TLS name", id.Name)
		case id.Token != "" && id.Token == deploymentToken:
			return nil, fmt.Errorf("client identity %q has the deployment's own token (security.token-file), which admits to everything: give it a token of its own", id.Name)
		}
		if other, dup := tokens[id.Token]; id.Token != "" && dup {
			return nil, fmt.Errorf("client identities %q and %q have the same token: a token names one identity, give each its own token file", other, id.Name)
		}
		if other, dup := tlsNames[id.TLSName]; id.TLSName != "" && dup {
			return nil, fmt.Errorf("client identities %q and %q have the same TLS name %q: a certificate names one identity", other, id.Name, id.TLSName)
		}
		names[id.Name] = true
		if id.Token != "" {
			tokens[id.Token] = id.Name
		} else {
			tlsNames[id.TLSName] = id.Name
		}
		s.ids = append(s.ids, &id)
	}
	return s, nil
}

// ByToken returns the identity whose token is token, or nil. Every
// identity's token is compared in constant time, so the time taken says
// nothing about which came close.
func (s *Set) ByToken(token string) *Identity {
	if s == nil || token == "" {
		return nil
	}
	var found *Identity
	for _, id := range s.ids {
		if id.Token != "" && subtle.ConstantTimeCompare([]byte(id.Token), []byte(token)) == 1 {
			found = id
		}
	}
	return found
}

// ByTLSName returns the identity whose TLS name is one of names (a
// verified certificate's Subject CN and DNS SANs), or nil.
func (s *Set) ByTLSName(names []string) *Identity {
	if s == nil {
		return nil
	}
	for _, id := range s.ids {
		for _, n := range names {
			if id.TLSName != "" && id.TLSName == n {
				return id
			}
		}
	}
	return nil
}
