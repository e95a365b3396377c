// Package deploystop stops the stores of a running deployment cleanly,
// from outside the daemons that run them (`umstored stop`): group by
// group, each group's followers before its leader, so that the group does
// not elect a new leader among stores about to stop; each store is asked
// over the wire protocol (an operator's Shutdown, which carries the
// deployment's operator token; a deployment without one accepts its client
// token, and one with no token at all accepts loopback only) and waited for
// until it no longer answers.
package deploystop
