// Package deploystatus says what state a deployment is in: it probes the
// stores of a deployment over the wire protocol, classifies each store, finds
// each group's leader and decides whether publishing is possible under the
// deployment's intergroup behaviour.
//
// It is the one model of a deployment's status. `umstored status` prints its
// [Summary]; the status page of a host's daemon (/v1/deployment) serves its
// [View], built from the daemon's own stores' [storegroup.Status] and probes
// of the others; `umstored stop` and `umstored recover` read the same view to
// find leaders and stores with state.
//
// # Store states
//
// Every store gets exactly one state, decided from what it says about itself
// (its status, or its answer to a probe) in this order, the first match
// winning:
//
//	failed       it stopped itself (it could not apply an entry; see its log)
//	refused      it is empty and refuses to start its group: no member has
//	             state while another group remembers the group ("cannot
//	             recover group N: no store with state"; see umstored recover)
//	leader       it leads its group
//	catching-up  it rejoined empty and has not reached its target yet
//	waiting      it is empty and waits for its turn to catch up (known only
//	             for stores run by the asking daemon)
//	empty        it runs with no state yet (deciding whether to bootstrap)
//	starting     it has state and raft is not running yet
//	stopped      raft has shut down
//	candidate    it asks for votes: its group has no leader it can reach
//	up           a follower
//	down         it did not answer
//
// Then, within a group that has a leader, a store that is "up" but more than
// 1000 entries behind the leader's applied index is "catching-up" too.
//
// A group's leader is the store in state "leader"; should two claim it (a
// deposed leader that has not noticed yet), the one with the longer log.
// Publishing is possible when the groups with a leader meet the intergroup
// behaviour ([quorum.Behavior.Met], with the groups that have a leader as
// both the active and the holding ones).
package deploystatus
