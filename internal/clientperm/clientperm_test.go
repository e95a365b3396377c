package clientperm

import (
	"errors"
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		name    string
		want    bool
	}{
		{"orders", "orders", true},
		{"orders", "orders.eu", false},
		{"orders.*", "orders.eu", true},
		{"orders.*", "orders", false},
		{"orders.*", "orders.eu.1", false},
		{"orders.>", "orders.eu", true},
		{"orders.>", "orders.eu.1", true},
		{"orders.>", "orders", false},
		{"orders.>", "orders.", false},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.us", false},
		{">", "anything.at.all", true},
		{">", "x", true},
		{"*", "x", true},
		{"*", "x.y", false},
	} {
		p, err := ParsePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(tc.name); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestParsePatternRefuses(t *testing.T) {
	for _, tc := range []struct{ pattern, says string }{
		{"", "empty pattern"},
		{"orders..eu", "empty token"},
		{".orders", "empty token"},
		{"orders.", "empty token"},
		{"orders.>.eu", "> before its last token"},
		{"orders*", "mixing * or >"},
		{"orders.e>", "mixing * or >"},
	} {
		if _, err := ParsePattern(tc.pattern); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParsePattern(%q) = %v, want an error saying %q", tc.pattern, err, tc.says)
		}
	}
}

func TestNewSetRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []Identity
		says string
	}{
		{"no name", []Identity{{Token: "a"}}, "has no name"},
		{"same name", []Identity{{Name: "x", Token: "a"}, {Name: "x", Token: "b"}}, `two client identities are named "x"`},
		{"same token", []Identity{{Name: "x", Token: "a"}, {Name: "y", Token: "a"}}, `client identities "x" and "y" have the same token`},
		{"same TLS name", []Identity{{Name: "x", TLSName: "c"}, {Name: "y", TLSName: "c"}}, `have the same TLS name "c"`},
		{"neither token nor TLS name", []Identity{{Name: "x"}}, "exactly one of"},
		{"both token and TLS name", []Identity{{Name: "x", Token: "a", TLSName: "c"}}, "exactly one of"},
		{"the deployment's token", []Identity{{Name: "x", Token: "dep"}}, "the deployment's own token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSet(tc.ids, "dep"); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("NewSet = %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

func TestIdentityLookupAndRefusal(t *testing.T) {
	pub, _ := ParsePatterns([]string{"orders.>"})
	s, err := NewSet([]Identity{{Name: "billing", Token: "t1", Publish: pub}, {Name: "svc", TLSName: "svc.example"}}, "dep")
	if err != nil {
		t.Fatal(err)
	}
	if id := s.ByToken("t1"); id == nil || id.Name != "billing" {
		t.Fatalf("ByToken(t1) = %v", id)
	}
	if id := s.ByToken("t2"); id != nil {
		t.Fatalf("ByToken(t2) = %v, want none", id)
	}
	if id := s.ByTLSName([]string{"other", "svc.example"}); id == nil || id.Name != "svc" {
		t.Fatalf("ByTLSName = %v", id)
	}
	billing := s.ByToken("t1")
	err = billing.MayPublish("orders.eu")
	if err != nil {
		t.Fatal(err)
	}
	err = billing.MayPublish("payments")
	if !errors.Is(err, ErrForbidden) || err.Error() != `identity "billing" may not publish source "payments" (its publish patterns: orders.>)` {
		t.Fatalf("MayPublish(payments) = %v", err)
	}
	var everything *Identity
	if everything.MayPublish("x") != nil || everything.MayReceive("x") != nil || everything.MayUseReceiver("x") != nil || !everything.MaySee("x") {
		t.Fatal("the nil identity (the deployment's own) was refused")
	}
}
