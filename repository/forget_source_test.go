package repository

import (
	"errors"
	"testing"
)

// TestApplyForgetSource: a source that holds nothing is forgotten once its
// last session was freed, and registered afresh after; every other case
// changes nothing and says why.
func TestApplyForgetSource(t *testing.T) {
	reg := Register{Source: "a", Session: "s", UnixNano: 1}
	expire := ExpireSession{Source: "a", Session: "s", UnixNano: 2}
	forget := ForgetSource{Source: "a", Session: "s"}
	for _, tc := range []struct {
		name    string
		cmds    []any
		want    error // the ForgetSource's Result.Err
		forgets bool
	}{
		{"registered, freed, forgotten", []any{reg, expire, forget}, nil, true},
		{"still held", []any{reg, forget}, ErrSourceNotEmpty, false},
		{"freed from another session", []any{reg, expire, ForgetSource{Source: "a", Session: "t"}}, ErrSourceNotEmpty, false},
		{"held again after the expiry", []any{reg, expire, Register{Source: "a", Session: "u", UnixNano: 3}, forget}, ErrSourceNotEmpty, false},
		{"published", []any{reg, pub("a", 1, 1), expire, forget}, ErrSourceNotEmpty, false},
		{"published and released", []any{reg, pub("a", 1, 2), Trim{Source: "a", Through: 2}, expire, forget}, ErrSourceNotEmpty, false},
		{"a receiver registered", []any{reg, RegisterReceiver{Source: "a", Receiver: "r", Session: "x"}, expire, forget}, ErrSourceNotEmpty, false},
		{"declared unpublished", []any{reg, Unpublished{Source: "a", Session: "s", From: 1, To: 9}, expire, forget}, ErrSourceNotEmpty, false},
		{"never held", []any{ForgetSource{Source: "z", Session: "s"}}, nil, false},
		{"no session named", []any{reg, expire, ForgetSource{Source: "a"}}, ErrBadCommand, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTest(t)
			res := mustApply(t, r, logOf(1, tc.cmds...))
			if got := res[len(res)-1].Err; !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Fatalf("ForgetSource: %v, want %v", got, tc.want)
			}
			_, held, err := r.Source("a")
			if err != nil {
				t.Fatal(err)
			}
			registered := tc.cmds[0] == any(reg)
			if held != (registered && !tc.forgets) {
				t.Fatalf("source a held %v after the ForgetSource; registered %v, forgotten %v", held, registered, tc.forgets)
			}
			if !tc.forgets {
				return
			}
			// Forgotten whole: registered again, it is a new source.
			mustApply(t, r, logOf(uint64(len(tc.cmds)+1), Register{Source: "a", Session: "v", UnixNano: 9}))
			in, _, _ := r.Source("a")
			if in.ExpiredSession != "" || in.CreatedUnixNano != 9 || in.Session != "v" {
				t.Fatalf("registered after being forgotten: %+v", in)
			}
		})
	}
}

// TestForgetSourceInOneBatch: a source forgotten in the batch that touched
// it is not written back at the batch's end, and one registered again in
// the same batch is new.
func TestForgetSourceInOneBatch(t *testing.T) {
	r := openApplied(t,
		Register{Source: "a", Session: "s", UnixNano: 1}, ExpireSession{Source: "a", Session: "s", UnixNano: 2},
		ForgetSource{Source: "a", Session: "s"}, Register{Source: "b", Session: "s", UnixNano: 3})
	infos, err := r.Sources()
	if err != nil || len(infos) != 1 || infos[0].Name != "b" {
		t.Fatalf("sources %+v (%v), want only b", infos, err)
	}
	again := openApplied(t,
		Register{Source: "a", Session: "s", UnixNano: 1}, ExpireSession{Source: "a", Session: "s", UnixNano: 2},
		ForgetSource{Source: "a", Session: "s"}, Register{Source: "a", Session: "t", UnixNano: 4})
	if in, ok, _ := again.Source("a"); !ok || in.CreatedUnixNano != 4 || in.ExpiredSession != "" {
		t.Fatalf("registered again in the same batch: %+v %v", in, ok)
	}
}

// TestRandomLogsForgetSources: the random logs of the determinism tests
// carry out ForgetSource entries and refuse others, so the model check
// covers both.
func TestRandomLogsForgetSources(t *testing.T) {
	done, refused := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		log := randomLog(seed, 400)
		res := mustApply(t, openTest(t), log)
		for i, e := range log {
			if len(e.Data) == 0 || CommandType(e.Data[0]) != CmdForgetSource {
				continue
			}
			if res[i].Err == nil {
				done++
			} else {
				refused++
			}
		}
	}
	if done == 0 || refused == 0 {
		t.Fatalf("random logs: %d ForgetSource carried out, %d refused; want some of each", done, refused)
	}
}
