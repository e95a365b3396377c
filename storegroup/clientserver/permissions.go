package clientserver

import (
	"crypto/subtle"
	"crypto/tls"
	"net"

	"umstore/internal/clientperm"
	"umstore/wire"
)

// identify names the identity of a client at its Hello when the store has
// client identities (Deps.Identities): the deployment's token names the
// deployment's own (nil: everything allowed), another token the identity
// it belongs to; a client whose token names none is known by its verified
// TLS certificate's names (Subject CN, DNS SANs). It returns the refusal
// for a client no identity matches.
func (cs *Server) identify(nc net.Conn, h *wire.Hello) (who *clientperm.Identity, refusal string) {
	if cs.Token != "" && subtle.ConstantTimeCompare([]byte(h.Token), []byte(cs.Token)) == 1 {
		return nil, "" // no identity has it (clientperm.NewSet)
	}
	if id := cs.Identities.ByToken(h.Token); id != nil {
		return id, ""
	}
	if id := cs.Identities.ByTLSName(peerNames(nc)); id != nil {
		return id, ""
	}
	return nil, "no client identity of this deployment matches this client: its token (if any) is none of theirs and its TLS certificate (if any) names none of them; give the client its own token file (security.clients[].token-file) or a certificate with the name its identity gives (security.clients[].tls-name)"
}

// peerNames returns the Subject CN and DNS SANs of a TLS client's
// verified certificate; none for plain TCP or an unverified certificate.
func peerNames(nc net.Conn) []string {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	leaf := st.VerifiedChains[0][0]
	names := append([]string{}, leaf.DNSNames...)
	if leaf.Subject.CommonName != "" {
		names = append(names, leaf.Subject.CommonName)
	}
	return names
}

// forbidden checks request m against the connection's identity and
// returns its refusal (CodeForbidden, naming the identity and the
// permission), or nil when allowed. Registering a source needs publish
// (a Publish needs the registration, so its frames are not checked
// again); reading one (Fetch, Subscribe, RangeDigest, a receiver's
// registration or query) needs receive; a durable receiver name, in a
// registration, a Subscribe or a consumption record, needs the receiver
// permission. A Sources list is filtered instead (sources). A Shutdown
// in a deployment without an operator token, where the client token would
// decide, needs the deployment's own identity.
func (cs *Server) forbidden(m wire.Message, who *clientperm.Identity) *wire.Error {
	if who == nil {
		return nil
	}
	var reqID uint64
	var err error
	switch m := m.(type) {
	case *wire.Register:
		reqID, err = m.ReqID, who.MayPublish(m.Source)
	case *wire.RegisterSource:
		reqID, err = m.ReqID, who.MayPublish(m.Source)
	case *wire.Fetch:
		reqID, err = m.ReqID, who.MayReceive(m.Source)
	case *wire.RangeDigest:
		reqID, err = m.ReqID, who.MayReceive(m.Source)
	case *wire.Subscribe:
		reqID, err = m.ReqID, who.MayReceive(m.Source)
		if err == nil && m.Receiver != "" {
			err = who.MayUseReceiver(m.Receiver)
		}
	case *wire.RegisterReceiver:
		reqID, err = m.ReqID, who.MayReceive(m.Source)
		if err == nil {
			err = who.MayUseReceiver(m.Receiver)
		}
	case *wire.ConsumedAs:
		reqID, err = m.ReqID, who.MayUseReceiver(m.Receiver)
	case *wire.Consumed:
		reqID, err = m.ReqID, who.MayUseReceiver(m.Receiver)
	case *wire.Shutdown:
		if cs.OperatorToken == "" {
			reqID, err = m.ReqID, who.MayStop()
		}
	case *wire.ReceiverQuery:
		reqID = m.ReqID
		if !who.MaySee(m.Source) {
			err = who.MayReceive(m.Source)
		}
	default:
		return nil
	}
	if err == nil {
		return nil
	}
	return &wire.Error{ReqID: reqID, Code: wire.CodeForbidden, Message: err.Error()}
}
