package repository

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Reasons RetentionPlan gives for trimming; Trim.Reason takes them as they
// are.
const (
	RetentionBytes    = "bytes"
	RetentionMessages = "messages"
)

// RetentionPlan tells the group's leader what retention asks of source: the
// smallest Through such that the messages left after Trim{Through} number at
// most maxMessages and weigh at most maxBytes of payload, dropping the
// oldest first. A limit of 0 means no limit. It returns through 0 (and
// reason "") when the source already fits; otherwise reason names the limit
// that decided through: RetentionBytes or RetentionMessages (RetentionBytes
// when both did). The newest message is dropped too if it alone exceeds
// maxBytes. An unknown source gives an error wrapping ErrUnknownSource.
//
// It keeps no clock and records nothing: it reads this repository's state in
// a short read transaction, walking only the messages it would drop. The
// plan is of the state as applied here; proposing it as a Trim is safe even
// if entries were committed since, since a Trim only ever drops the oldest
// messages, never above HighSeq, and one at or below the TrimmedThrough
// already recorded changes nothing. Age limits are the leader's: the
// repository keeps no time per message.
func (r *Repo) RetentionPlan(source string, maxBytes, maxMessages uint64) (through uint64, reason string, err error) {
	err = r.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSources).Bucket([]byte(source))
		if b == nil {
			return fmt.Errorf("%w %q", ErrUnknownSource, source)
		}
		st, err := loadState(tx, source)
		if err != nil {
			return err
		}
		msgs := b.Bucket(bucketMsgs)
		if msgs == nil {
			return fmt.Errorf("%w: source %q has no messages bucket", ErrFormat, source)
		}
		mc := newMsgCursor(msgs)
		mc.lazy = true // sizes only: nothing read from the log
		through, reason, err = planRetention(st.Count, st.Bytes, maxBytes, maxMessages, mc)
		if err != nil {
			return fmt.Errorf("source %q: %w", source, err)
		}
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("retention plan of %q: %w", source, err)
	}
	return through, reason, nil
}

// planRetention walks the messages of mc from the oldest, dropping until
// count messages of size bytes fit the limits (0: none).
func planRetention(count, size, maxBytes, maxMessages uint64, mc *msgCursor) (through uint64, reason string, err error) {
	over := func() string {
		switch {
		case maxBytes > 0 && size > maxBytes:
			return RetentionBytes
		case maxMessages > 0 && count > maxMessages:
			return RetentionMessages
		}
		return ""
	}
	seq, _, ok, err := mc.first()
	for ; ok; seq, _, ok, err = mc.next() {
		why := over()
		if why == "" {
			break
		}
		through, reason = seq, why
		count -= min(count, 1)
		size -= min(size, uint64(mc.run.curLen))
	}
	if err != nil {
		return 0, "", err
	}
	return through, reason, nil
}
