package clientserver

import (
	"crypto/subtle"
	"io"
	"net"

	"umstore/internal/clientperm"
	"umstore/wire"
)

// backupChunk is how many bytes of the stream each BackupChunk carries,
// and backupChunksAhead how many chunks may wait for the connection's
// writer: a slow client holds the copy back instead of the store
// buffering it.
const (
	backupChunk       = 1 << 20
	backupChunksAhead = 8
)

// backup answers an operator's Backup: the leader streams a copy of its
// repository, taken at one applied index while publishing goes on
// (repository.Snapshot), in BackupChunk frames. It holds the connection's
// request loop until the copy is sent, and the connection is exempt from
// the idle bound meanwhile, since the client only reads. Who may ask is
// decided as for a Shutdown (mayOperate): taking a copy of every message
// of a group is an operator's act, not a client's.
func (cs *Server) backup(m *wire.Backup, nc net.Conn, rd *frameReader, who *clientperm.Identity, replies *replyQueue) {
	if why := cs.mayOperate(m.Token, who, nc.RemoteAddr(), "taking a backup"); why != "" {
		cs.Metrics.refused(refusedUnauthorized)
		cs.Log.Warn("refused a backup", "remote", nc.RemoteAddr(), "why", why)
		replies.put(reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeAuth, Message: why}})
		return
	}
	if rep, ok := cs.notLeader(m.ReqID); !ok {
		replies.put(rep)
		return
	}
	if cs.Snapshot == nil {
		replies.put(reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "this store takes no backups"}})
		return
	}
	snap, err := cs.Snapshot()
	if err != nil {
		replies.put(reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "cannot take a copy of the repository: " + err.Error()}})
		return
	}
	defer snap.Release()
	rd.subscribed.Add(1)
	defer rd.subscribed.Add(-1)
	st := cs.Status()
	cs.Log.Info("sending a backup", "remote", nc.RemoteAddr(), "applied_index", snap.Index(), "bytes", snap.Size())
	head := wire.BackupChunk{ReqID: m.ReqID, Store: cs.Name, Group: cs.Group, GroupID: st.GroupID, Index: snap.Index(), Term: snap.Term(), Size: snap.Size()}
	w := &chunkWriter{head: head, replies: replies, slots: make(chan struct{}, backupChunksAhead)}
	if _, err := snap.WriteTo(w); err != nil {
		// The client sees the stream end without Last: the copy is refused.
		cs.Log.Error("a backup failed", "remote", nc.RemoteAddr(), "err", err)
		replies.put(reply{msg: &wire.Error{ReqID: m.ReqID, Code: wire.CodeUnknown, Message: "the copy failed: " + err.Error()}})
		return
	}
	w.flush(true)
	cs.Log.Info("sent a backup", "remote", nc.RemoteAddr(), "applied_index", snap.Index(), "bytes", snap.Size())
}

// chunkWriter cuts the stream into BackupChunk frames.
type chunkWriter struct {
	head    wire.BackupChunk
	buf     []byte
	replies *replyQueue
	slots   chan struct{} // a chunk holds one from queued until the writer takes it
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), backupChunk-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == backupChunk {
			w.flush(false)
		}
	}
	return n, nil
}

func (w *chunkWriter) flush(last bool) {
	c := w.head
	c.Data, c.Last = w.buf, last
	w.slots <- struct{}{}
	w.replies.put(reply{msg: &c, release: func() { <-w.slots }})
	w.buf = make([]byte, 0, backupChunk)
}

// mayOperate says why a request for an operator's act (what, for the
// message) may not be done, or "" if it may: with an operator token, a
// request carrying it; else, with client identities, one that may stop
// stores (clientperm); else, with a client token, any client (the
// handshake checked it); with neither, a client on loopback.
func (cs *Server) mayOperate(token string, who *clientperm.Identity, remote net.Addr, what string) string {
	switch {
	case cs.OperatorToken != "":
		if subtle.ConstantTimeCompare([]byte(token), []byte(cs.OperatorToken)) != 1 {
			return what + " needs the deployment's operator token (security.operator-token-file); umstored sends it from the deployment file, or from --operator-token-file"
		}
	case who != nil:
		if err := who.MayStop(); err != nil {
			return what + ": " + err.Error()
		}
	case cs.Token != "":
		// The handshake checked the client token.
	default:
		if ta, ok := remote.(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			return "this deployment has no operator or client token, so only a client on loopback is allowed " + what + ": run it on a host of the deployment, or give the deployment a security.operator-token-file"
		}
	}
	return ""
}

var _ io.Writer = (*chunkWriter)(nil)
