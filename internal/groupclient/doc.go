// Package groupclient finds and follows the leader of one store group. It
// is umstore's one implementation of leader-following: it tries the group's
// stores (the last known leader first), follows NotLeader redirects, stops
// at a refused token (every store of a deployment checks the same one), and
// starts over on another store when a connection fails.
//
// Stores are dialed in a staggered race (race.go): the first is given a
// short head start, then the next is dialed too, and the first to complete
// its handshake is used. A paused store (a SIGSTOPped host: its kernel
// accepts the connection, nothing answers) therefore costs the others a
// head start instead of the dialer's whole timeout, and is tried last for
// a while afterwards. A store whose Welcome names another group than the
// client's is refused (ErrWrongGroup): the client's store list mixes up
// the groups.
//
// Two ways in, for two kinds of caller:
//
//   - Call is request/reply on a kept connection (the receiver's fetches
//     and consumption records, the stores' intergroup repair, the status
//     commands). A Call rides out a short election itself: it goes round
//     the stores again, pausing when a store names no leader, within a
//     bounded number of attempts.
//   - Open starts a session on the leader and hands its connection over
//     (the publisher's registration, the receiver's subscriptions). It asks
//     each store once, following redirects, and gives up otherwise: the
//     caller owns the retry loop and its pacing (Config.ReconnectDelay for
//     the publisher), and tells the client where leadership moved when its
//     session is redirected (Redirected).
package groupclient
