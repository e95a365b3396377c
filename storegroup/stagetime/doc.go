// Package stagetime times the stages one Publish goes through in a store,
// so that where its latency goes is measured rather than guessed: each
// stage is a histogram of umstore_publish_stage_seconds, labelled with the
// store and the stage.
//
// The stages, in the order a message meets them on its group's leader
// (ARCHITECTURE.md, "the path of one message"):
//
//	queued      the client server read the frame; until it is proposed
//	            (the connection's window and receiver pacing wait here)
//	raft_queue  proposed; until the leader's raft appends it to its log
//	            (raft's apply channel, the leader loop's turn)
//	commit      appended; until the FSM decided its result: the leader's
//	            log write, replication, a follower's log write, the
//	            commit index's return, the FSM's queue and the decision
//	answer      decided; until the answer is written to the client
//	total       read; until the answer is written
//
// and two that every store times for every batch, leader or follower:
//
//	log_write   one write of raft entries to the log, fsync included
//	decide      an FSM batch's start; until its results are decided
//	repo_commit decided; until the repository committed the batch
//	            (the FSM takes no further batch meanwhile)
//
// Files: stagetime.go.
package stagetime
