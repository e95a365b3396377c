package storegroup

// A range another group holds and this one does not is copied only once it
// has stayed missing from one pass to the next. A live publisher sends
// every message to every group within milliseconds of each other: a pass
// that finds a source a few messages behind the other group is looking at
// messages still on their way, and copying them makes a second raft entry
// of each (29,200 of 400,000 deliveries in one run of 10,000 sources).
// What a group really lacks (it was down, or cut off, while the publisher
// sent) is still missing a pass later, and copied then: repair comes one
// RepairInterval later than it did, and never copies what the publisher
// delivers meanwhile.

// missingKey names a source as seen from one other group.
type missingKey struct {
	group  int
	source string
}

// stillMissing records missing as what this pass found missing of source
// against group, and returns the part of it the previous pass found
// missing too: what to copy now.
func (rp *repairer) stillMissing(group int, source string, missing []seqRange) []seqRange {
	key := missingKey{group, source}
	before := rp.missing[key]
	if len(missing) == 0 {
		delete(rp.missing, key)
	} else {
		rp.missing[key] = missing
	}
	if len(before) == 0 || len(missing) == 0 {
		return nil
	}
	return subtract(missing, subtract(missing, before))
}
