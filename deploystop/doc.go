// Package deploystop stops the stores of a running deployment cleanly,
// from outside the daemons that run them (`umstored stop`): group by
// group, each group's followers before its leader, so that the group does
// not elect a new leader among stores about to stop; each store is asked
// over the wire protocol (an operator's Shutdown, which needs the
// deployment's token, or loopback without one) and waited for until it no
// longer answers.
package deploystop
