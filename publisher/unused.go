package publisher

// NOT DECLARED, since session 10. The range below is computed
// (resumeDecision.unused) but no longer sent: the fault suite (seed 1004,
// schedules 2, 25 and 32) found receivers skipping messages in it that the
// group which had not answered held and had acknowledged: the answering
// group recorded them as never published before repair copied them, and
// a receiver reading it passed over them without a word. Until the stores
// can tell what no group holds (a record made final only once every
// group has answered for the range), the range is reported as a gap, as
// before: loss that may not be loss, never the other way round: no Publish
// carries UnusedFrom.

// A publisher restarted while a group does not answer resumes past its
// state file's bound (SentUpTo, reserve.go): that group may hold what an
// earlier incarnation sent up to it. It never sends the numbers between
// its last stable one (or the highest an answering group holds) and the
// bound (resumeDecision.unused). Left alone, every group would record
// them as a gap, and every receiver would report them as loss for good.
// The publisher says so instead: the first Publish on each connection
// carries the range (wire.Publish.UnusedFrom, UnusedTo), and the group
// records it as never published (repository.Unpublished) except for the
// numbers it holds. A group that did not answer may hold some of them,
// sent by an earlier incarnation: those are held, and repair copies them
// as usual; the rest were never published by anyone.
//
// Numbers at or below the state file's last stable one are not declared:
// they were published, and a group that lost them lost them.
