package repository

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ReceiverResult says what a RegisterReceiver, ExpireReceiver or
// ForgetReceiver did to the record of Receiver on Source.
type ReceiverResult struct {
	Source   string
	Receiver string
	Session  string // the command's session
	Seq      uint64 // the position recorded afterwards (0: none); for ForgetReceiver, the one forgotten
	// Created: a RegisterReceiver found no record of the receiver (a new
	// name, or one whose state was forgotten).
	Created bool
	// Changed: the command took effect. A registration always does; an
	// expiry only of the receiver's active session; a forget only of an
	// inactive receiver still on that session.
	Changed bool
}

// validReceiver checks a receiver command's names before the source is
// looked up.
func validReceiver(cmd, source, receiver string) error {
	if err := validSourceName(source); err != nil {
		return err
	}
	switch {
	case receiver == "":
		return fmt.Errorf("%w: %s on %q with an empty receiver name", ErrBadCommand, cmd, source)
	case len(receiver) > MaxSourceNameLen:
		return fmt.Errorf("%w: %s on %q: receiver name of %d bytes exceeds %d", ErrBadCommand, cmd, source, len(receiver), MaxSourceNameLen)
	}
	return nil
}

// receiverBucket returns the receivers bucket of a source the group holds
// (sources created earlier in this transaction included), creating it if
// create; nil if the group does not hold the source, or (without create)
// has no receiver of it.
func (a *applier) receiverBucket(source string, create bool) (*bolt.Bucket, bool, error) {
	b := a.sources.Bucket([]byte(source))
	if b == nil {
		return nil, false, nil
	}
	if !create {
		return b.Bucket(bucketReceivers), true, nil
	}
	rb, err := b.CreateBucketIfNotExists(bucketReceivers)
	return rb, true, err
}

// readRecord returns the record of receiver in rb, if any.
func readRecord(source string, rb *bolt.Bucket, receiver string) (receiverRecord, bool, error) {
	if rb == nil {
		return receiverRecord{}, false, nil
	}
	v := rb.Get([]byte(receiver))
	if v == nil {
		return receiverRecord{}, false, nil
	}
	rec, err := decodeReceiverRecord(source, []byte(receiver), v)
	return rec, err == nil, err
}

func putRecord(rb *bolt.Bucket, source, receiver string, rec *receiverRecord) error {
	v, err := encodeReceiver(rec)
	if err != nil {
		return fmt.Errorf("encode receiver %q of source %q: %w", receiver, source, err)
	}
	return rb.Put([]byte(receiver), v)
}

// consumed records a receiver's position on a source the group knows. The
// position only moves forward: a Seq at or below the recorded one changes
// nothing (not even the time). The rest of the record (a registration's
// session, pacing and activity) is kept as it was.
func (a *applier) consumed(c Consumed, res *Result) error {
	if err := validReceiver("Consumed", c.Source, c.Receiver); err != nil {
		res.Err = err
		return nil
	}
	if c.Seq == 0 {
		res.Err = fmt.Errorf("%w: Consumed on %q by %q at sequence number 0; sequence numbers start at 1", ErrBadCommand, c.Source, c.Receiver)
		return nil
	}
	// A Consumed never creates a source: the group records positions only
	// in sources it knows.
	rb, known, err := a.receiverBucket(c.Source, true)
	if err != nil {
		return err
	}
	if !known {
		res.Err = fmt.Errorf("%w %q: Consumed by %q; positions are recorded only for sources the group holds", ErrUnknownSource, c.Source, c.Receiver)
		return nil
	}
	rec, _, err := readRecord(c.Source, rb, c.Receiver)
	if err != nil {
		return err
	}
	cr := &ConsumedResult{Source: c.Source, Receiver: c.Receiver, Seq: rec.Seq}
	res.Consumed = cr
	if c.Seq <= rec.Seq {
		return nil
	}
	rec.Seq, rec.UnixNano = c.Seq, c.UnixNano
	cr.Seq, cr.Advanced = c.Seq, true
	return putRecord(rb, c.Source, c.Receiver, &rec)
}

// registerReceiver records a receiver's registration: active, on the
// command's session and pacing, its position kept.
func (a *applier) registerReceiver(c RegisterReceiver, res *Result) error {
	if err := validReceiver("RegisterReceiver", c.Source, c.Receiver); err != nil {
		res.Err = err
		return nil
	}
	if c.Session == "" {
		res.Err = fmt.Errorf("%w: RegisterReceiver of %q on %q with an empty session", ErrBadCommand, c.Receiver, c.Source)
		return nil
	}
	rb, known, err := a.receiverBucket(c.Source, true)
	if err != nil {
		return err
	}
	if !known {
		res.Err = fmt.Errorf("%w %q: RegisterReceiver of %q; receivers register only with sources the group holds", ErrUnknownSource, c.Source, c.Receiver)
		return nil
	}
	rec, found, err := readRecord(c.Source, rb, c.Receiver)
	if err != nil {
		return err
	}
	rec.Session, rec.Paced, rec.Active, rec.Registered = c.Session, c.Paced, true, c.UnixNano
	res.Receiver = &ReceiverResult{Source: c.Source, Receiver: c.Receiver, Session: c.Session, Seq: rec.Seq, Created: !found, Changed: true}
	return putRecord(rb, c.Source, c.Receiver, &rec)
}

// expireReceiver marks an active receiver on the command's session
// inactive; anything else changes nothing.
func (a *applier) expireReceiver(c ExpireReceiver, res *Result) error {
	rec, rb, err := a.receiverFor("ExpireReceiver", c.Source, c.Receiver, c.Session, res)
	if err != nil || rb == nil {
		return err
	}
	rr := &ReceiverResult{Source: c.Source, Receiver: c.Receiver, Session: c.Session, Seq: rec.Seq}
	res.Receiver = rr
	if rec.Session != c.Session || !rec.Active {
		return nil // registered again meanwhile, or already expired
	}
	rec.Active, rec.Expired = false, c.UnixNano
	rr.Changed = true
	return putRecord(rb, c.Source, c.Receiver, &rec)
}

// forgetReceiver deletes an inactive receiver still on the command's
// session; anything else changes nothing.
func (a *applier) forgetReceiver(c ForgetReceiver, res *Result) error {
	rec, rb, err := a.receiverFor("ForgetReceiver", c.Source, c.Receiver, c.Session, res)
	if err != nil || rb == nil {
		return err
	}
	rr := &ReceiverResult{Source: c.Source, Receiver: c.Receiver, Session: c.Session, Seq: rec.Seq}
	res.Receiver = rr
	if rec.Session != c.Session || rec.Active {
		return nil
	}
	rr.Changed = true
	return rb.Delete([]byte(c.Receiver))
}

// receiverFor validates an expiry or forget and returns the record it
// names; rb is nil (and res.Err or res.Receiver set) when there is nothing
// to act on.
func (a *applier) receiverFor(cmd, source, receiver, session string, res *Result) (receiverRecord, *bolt.Bucket, error) {
	if err := validReceiver(cmd, source, receiver); err != nil {
		res.Err = err
		return receiverRecord{}, nil, nil
	}
	if session == "" {
		res.Err = fmt.Errorf("%w: %s of %q on %q with an empty session", ErrBadCommand, cmd, receiver, source)
		return receiverRecord{}, nil, nil
	}
	rb, known, err := a.receiverBucket(source, false)
	if err != nil {
		return receiverRecord{}, nil, err
	}
	if !known {
		res.Err = fmt.Errorf("%w %q: %s of %q; only sources the group holds have receivers", ErrUnknownSource, source, cmd, receiver)
		return receiverRecord{}, nil, nil
	}
	rec, found, err := readRecord(source, rb, receiver)
	if err != nil {
		return receiverRecord{}, nil, err
	}
	if !found {
		res.Receiver = &ReceiverResult{Source: source, Receiver: receiver, Session: session}
		return receiverRecord{}, nil, nil
	}
	return rec, rb, nil
}

// registerPaced is register that also records the source's pacing.
func (a *applier) registerPaced(c RegisterPaced, res *Result) error {
	if err := validSourceName(c.Source); err != nil {
		res.Err = err
		return nil
	}
	if c.Pacing > PacingNonBlocking {
		res.Err = fmt.Errorf("%w: RegisterPaced of %q with pacing mode %d; the modes are 0 (none), 1 (blocking) and 2 (non-blocking)", ErrBadCommand, c.Source, c.Pacing)
		return nil
	}
	if err := a.register(c.Register, res); err != nil || res.Err != nil {
		return err
	}
	return writePacing(a.sources.Bucket([]byte(c.Source)), c.Pacing)
}
