package repository

import (
	"errors"
	"fmt"
)

// commandSpec is all the repository knows of one command type: its name for
// logs and errors, how to read its body, and how to apply it. String,
// DecodeCommand and Apply read nothing else, so a command type is known
// exactly when it has a row in commands.
type commandSpec struct {
	name string
	// decode reads the body (everything after the type byte); r's sticky
	// error says whether it could.
	decode func(r *mpReader) any
	// apply applies a value decode returned. Domain refusals go to
	// res.Err; a returned error aborts the whole batch.
	apply func(a *applier, cmd any, res *Result) error
}

// known reports whether the row describes a command type.
func (s *commandSpec) known() bool { return s.decode != nil }

// command builds a row from a typed decoder and apply rule, so that each
// row names the functions it uses and the compiler checks that they agree
// on the command's Go type.
func command[C any](name string, decode func(*mpReader) C, apply func(*applier, C, *Result) error) commandSpec {
	return commandSpec{
		name:   name,
		decode: func(r *mpReader) any { return decode(r) },
		apply:  func(a *applier, cmd any, res *Result) error { return apply(a, cmd.(C), res) },
	}
}

// commands is the one table of the command types this version knows,
// indexed by type byte with IgnorableFlag cleared. Adding a command type is
// adding its row (and its constant, Go type, encoder and golden sample);
// numbers are pinned forever, so a row is never renumbered or reused. The
// four Publish rows are the 2x2 of session x checksums that predates the
// keyed Publish body (command_publish_keyed.go): their bodies never change,
// and old logs replay through them forever.
//
// The table is filled by init, not by its declaration: reading a Publish
// from the raft log (log runs) decodes its entry, which reads the table.
var commands [IgnorableFlag]commandSpec

func init() {
	commands = [IgnorableFlag]commandSpec{
		CmdInitGroup:          command("InitGroup", decodeInitGroup, (*applier).initGroup),
		CmdRegister:           command("Register", decodeRegister, (*applier).register),
		CmdPublish:            command("Publish", decodePublish, (*applier).publish),
		CmdPeerGroup:          command("PeerGroup", decodePeerGroup, (*applier).peerGroup),
		CmdConsumed:           command("Consumed", decodeConsumed, (*applier).consumed),
		CmdTrim:               command("Trim", decodeTrim, (*applier).trim),
		CmdExpireSession:      command("ExpireSession", decodeExpireSession, (*applier).expireSession),
		CmdPublishAs:          command("PublishAs", decodePublishAs, (*applier).publishAs),
		CmdPublishChecksums:   command("PublishChecksums", decodePublishChecksums, (*applier).publish),
		CmdPublishAsChecksums: command("PublishAsChecksums", decodePublishAsChecksums, (*applier).publishAs),
		CmdRegisterReceiver:   command("RegisterReceiver", decodeRegisterReceiver, (*applier).registerReceiver),
		CmdExpireReceiver:     command("ExpireReceiver", decodeExpireReceiver, (*applier).expireReceiver),
		CmdForgetReceiver:     command("ForgetReceiver", decodeForgetReceiver, (*applier).forgetReceiver),
		CmdRegisterPaced:      command("RegisterPaced", decodeRegisterPaced, (*applier).registerPaced),
		CmdMemberAddress:      command("MemberAddress", decodeMemberAddress, (*applier).memberAddress),
		CmdPublishKeyed:       command("PublishKeyed", decodePublishKeyed, (*applier).publishKeyed),
		CmdUnpublished:        command("Unpublished", decodeUnpublished, (*applier).unpublished),
		CmdActiveLevel:        command("ActiveLevel", decodeActiveLevel, (*applier).activeLevel),
		CmdForgetSource:       command("ForgetSource", decodeForgetSource, (*applier).forgetSource),
	}
}

// specOf returns the row of t, IgnorableFlag ignored; its known method says
// whether there is one.
func specOf(t CommandType) *commandSpec { return &commands[t&^IgnorableFlag] }

// String names the type for logs and errors.
func (t CommandType) String() string {
	name := specOf(t).name
	if name == "" {
		name = fmt.Sprintf("CommandType(%d)", byte(t&^IgnorableFlag))
	}
	if t&IgnorableFlag != 0 {
		name += "|Ignorable"
	}
	return name
}

// IsIgnorable reports whether data is a command marked with IgnorableFlag.
func IsIgnorable(data []byte) bool {
	return len(data) > 0 && CommandType(data[0])&IgnorableFlag != 0
}

// DecodeCommand reads an encoded command and returns its value: an
// InitGroup, Register, Publish, PeerGroup, Consumed, Trim, ExpireSession,
// PublishAs, RegisterReceiver, ExpireReceiver, ForgetReceiver, RegisterPaced
// MemberAddress, Unpublished or ActiveLevel (a keyed Publish body gives a Publish or a PublishAs). A
// type this version does not know gives an error wrapping ErrUnknownCommand
// (see IsIgnorable for whether it may be skipped); a keyed body carrying an
// essential field this version does not know, one wrapping ErrUnknownField;
// a body that cannot be read, or empty data, one wrapping ErrBadCommand.
//
// A decoded Publish's Payloads alias data: do not modify data while they are
// in use, and copy them to keep them beyond data's lifetime.
func DecodeCommand(data []byte) (any, error) {
	_, cmd, err := decodeCommand(data)
	return cmd, err
}

// decodeCommand is DecodeCommand that also returns the command's row.
func decodeCommand(data []byte) (*commandSpec, any, error) {
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%w: empty command", ErrBadCommand)
	}
	t := CommandType(data[0])
	spec := specOf(t)
	if !spec.known() {
		hint := "this store must be upgraded to apply it"
		if t&IgnorableFlag != 0 {
			hint = "it is marked ignorable and may be skipped"
		}
		return nil, nil, fmt.Errorf("%w %d: %s", ErrUnknownCommand, byte(t&^IgnorableFlag), hint)
	}
	r := mpReader{b: data, off: 1}
	cmd := spec.decode(&r)
	r.end()
	var unknown *unknownFieldError
	switch {
	case errors.As(r.err, &unknown):
		return nil, nil, fmt.Errorf("%w %q in a %v body: this store must be upgraded to apply it", ErrUnknownField, unknown.key, t&^IgnorableFlag)
	case r.err != nil:
		return nil, nil, fmt.Errorf("%w: %v body: %v", ErrBadCommand, t&^IgnorableFlag, r.err)
	}
	return spec, cmd, nil
}

func expectFields(r *mpReader, t CommandType, want int) {
	if n := r.arrayLen(); r.err == nil && n != want {
		r.fail("%v body has %d fields, want %d", t, n, want)
	}
}

// apply applies one entry above the applied index. Domain failures go to
// res.Err; a returned error aborts the whole batch.
func (a *applier) apply(e *Entry, res *Result) error {
	if len(e.Data) == 0 {
		return nil // raft configuration entries and the like: index only
	}
	a.index = e.Index
	spec, cmd, err := decodeCommand(e.Data)
	switch {
	case errors.Is(err, ErrUnknownField):
		// Whatever the type byte says: the entry is one this store
		// knows, carrying something it does not, that may matter.
		return &unknownCommandError{index: e.Index, err: err}
	case errors.Is(err, ErrUnknownCommand) && IsIgnorable(e.Data):
		res.Ignored = true
		return nil
	case errors.Is(err, ErrUnknownCommand):
		return &unknownCommandError{index: e.Index, err: err}
	case err != nil:
		res.Err = err
		return nil
	}
	return spec.apply(a, cmd, res)
}
