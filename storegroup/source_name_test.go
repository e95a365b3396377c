package storegroup_test

import (
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/repository"
	"umstore/wire"
)

// The wire protocol and the repository agree on the longest source name.
func TestSourceNameLimitsAgree(t *testing.T) {
	t.Parallel()
	if wire.MaxSourceNameLen != repository.MaxSourceNameLen {
		t.Fatalf("wire.MaxSourceNameLen %d, repository.MaxSourceNameLen %d", wire.MaxSourceNameLen, repository.MaxSourceNameLen)
	}
}

// Every request that names a source is refused with a bad-request Error
// when the name is not printable UTF-8 of at most 255 bytes; nothing
// reaches the log, and the connection keeps serving.
func TestStoreRefusesUnprintableSourceNames(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 1, nil)
	leader := c.WaitLeader(1, 30*time.Second)
	lc := dial(t, clientAddr(c, leader.Name()))
	for _, name := range []string{"evil\x1b[2J\x1b[H", "two\nlines", "csi\u009b31m", "bad\xffutf8", "rtl\u202eevil", strings.Repeat("s", 256)} {
		for _, req := range []wire.Message{
			&wire.Register{ReqID: 1, Source: name, Session: "x"},
			&wire.Publish{ReqID: 2, Source: name, FirstSeq: 1, Payloads: [][]byte{[]byte("a")}},
			&wire.Consumed{ReqID: 3, Source: name, Receiver: "r", Seq: 1},
			&wire.Fetch{ReqID: 4, Source: name, From: 1, To: 10},
			&wire.Subscribe{ReqID: 5, Source: name, From: 1},
		} {
			e, ok := lc.call(req).(*wire.Error)
			if !ok || e.Code != wire.CodeBadRequest || !strings.Contains(e.Message, "invalid source name") {
				t.Errorf("%T on %q: got %#v, want a bad-request Error naming the source name", req, name, e)
			}
		}
	}
	if r, ok := lc.call(&wire.Register{ReqID: 6, Source: "fine name", Session: "x"}).(*wire.Registered); !ok {
		t.Fatalf("register of a good name on the same connection: %#v", r)
	}
	srcs, err := leader.Repository().Sources()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		if s.Name != "fine name" {
			t.Errorf("the repository holds source %q", s.Name)
		}
	}
}
