// Package quorum decides when a publisher's messages are stable.
//
// A publisher sends the messages of one source, numbered by contiguous
// uint64 sequence numbers starting at some base (base >= 1), to N store
// groups. Each group is a Raft cluster; inside a group a message counts as
// confirmed once the members the intragroup behaviour names hold it
// (Intragroup: "quorum", the group's Raft commit, by default; "all-active"
// or "all" ask for more of its members). Groups report what they confirmed
// as ranges of sequence numbers, in any order and possibly overlapping.
//
// Across groups, the intergroup behaviour (Behavior) says how many group
// confirmations make one sequence number stable:
//
//   - Any (the default, "any"): at least one group confirmed it.
//   - Majority ("majority"): more than half of the N configured groups
//     (N/2+1) confirmed it, whether or not they are connected.
//   - AllActive ("all-active"): every group that is active right now
//     confirmed it, and at least one group is active. With no active group
//     nothing becomes stable. Confirmations from inactive groups are kept
//     but do not count until the group is active again.
//   - All ("all"): all N configured groups confirmed it.
//
// Different sequence numbers may be made stable by different groups: if
// group 0 confirmed 1-5 and group 1 confirmed 6-10, then under Any all of
// 1-10 are stable.
//
// Stability is reported in sequence order. The stable watermark W is the
// highest sequence number such that every number in [base, W] is stable; a
// stable number above a gap is not reported until the gap closes. W only
// grows: activating a group that lags behind never takes back stability
// already reported, it only raises the bar for numbers above W.
//
// Tracker holds the bookkeeping for one source. It keeps each group's
// confirmations as a sorted set of merged, disjoint ranges, so confirming a
// range costs a binary search plus the ranges it merges with, and advancing
// W jumps from range end to range end instead of stepping through every
// sequence number. The package does no I/O and is not safe for concurrent
// use; the owner serialises calls.
package quorum
