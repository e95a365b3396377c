// Package connmux carries many client sessions of one process to a store
// over one connection, as an Ultra Messaging context carries all its
// sources over one transport: a thousand publishers in a process cost the
// store one connection, one reader and one writer, not a thousand, and
// their frames share TCP writes both ways.
//
// A Pool holds the process's connections, one per store address and
// dialer. Dial returns a Lane: a wire.FrameConn whose frames go out on the
// shared connection and whose Read returns only the answers meant for it.
// Answers are routed by ReqID: a lane's requests leave with its lane
// number in the ReqID's high bits (laneShift), and the ReqID an answer
// brings back is restored to the lane's own before Read returns it.
// Frames without a ReqID go by source (HeldBack, Delivery: to the lane that
// registered the source); a redirect or error the store sends to the
// connection as a whole (ReqID 0) goes to every lane.
//
// Closing a lane ends that session only; the connection closes with its
// last lane, or for every lane when it fails or a lane abandons it (the
// store went silent: every lane would find the same).
package connmux
