package clientserver

import (
	"context"
	"crypto/subtle"
	"net"
	"time"

	"umstore/wire"
)

// shutdown stops the store cleanly at an operator's request, answering
// first. Who may ask: with an operator token, a request carrying it; else,
// with a client token, any client (the handshake checked the token); with
// neither, a client on loopback.
func (cs *Server) shutdown(m *wire.Shutdown, nc net.Conn) reply {
	if why := cs.mayStop(m, nc.RemoteAddr()); why != "" {
		cs.Metrics.refused(refusedUnauthorized)
		cs.Log.Warn("refused to stop at a client's request", "remote", nc.RemoteAddr(), "why", why)
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeAuth, Message: why}}
	}
	cs.Log.Info("stopping at an operator's request", "remote", nc.RemoteAddr())
	go func() {
		time.Sleep(100 * time.Millisecond) // let the answer go out
		cs.Stop()
	}()
	return reply{msg: &wire.OK{ReqID: m.ReqID}}
}

// mayStop says why m may not stop the store, or "" if it may.
func (cs *Server) mayStop(m *wire.Shutdown, remote net.Addr) string {
	switch {
	case cs.OperatorToken != "":
		if subtle.ConstantTimeCompare([]byte(m.Token), []byte(cs.OperatorToken)) != 1 {
			return "stopping a store needs the deployment's operator token (security.operator-token-file); umstored stop sends it from the deployment file, or from --operator-token-file"
		}
	case cs.Token != "":
		// The handshake checked the client token.
	default:
		if ta, ok := remote.(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			return "this deployment has no operator or client token, so only a client on loopback may stop a store: run umstored stop on the store's host, or give the deployment a security.operator-token-file"
		}
	}
	return ""
}

// memberMove hands a MemberMove to the store's desk.
func (cs *Server) memberMove(ctx context.Context, m *wire.MemberMove, nc net.Conn, conn *connState) reply {
	if cs.Members == nil {
		return reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "this store takes no member moves"}}
	}
	return reply{msg: cs.Members.Move(ctx, m, nc, &conn.move)}
}
