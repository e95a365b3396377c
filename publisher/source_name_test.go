package publisher

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"umstore/wire"
)

// A source name that would be unsafe to print, or that the stores cannot
// hold, is refused by New before anything is dialled.
func TestNewRefusesBadSourceNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"red\x1b[31malert", // terminal escape
		"two\nlines",       // a forged second line in status output
		"csi\u009b2J",      // C1 control (8-bit CSI)
		"rtl\u202eevil",    // right-to-left override
		"bad\xffutf8",      // not UTF-8
		strings.Repeat("s", wire.MaxSourceNameLen+1), // too long for the repository
	} {
		cfg := DefaultConfig()
		cfg.Source = name
		cfg.Groups = [][]string{{"127.0.0.1:1"}} // never dialled
		// Refused at once; without the check New would wait for the
		// unreachable store until the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		p, err := New(ctx, cfg)
		cancel()
		if err == nil {
			p.Close()
			t.Errorf("%q: accepted", name)
			continue
		}
		if !errors.Is(err, ErrConfig) || !errors.Is(err, wire.ErrSourceName) {
			t.Errorf("%q: %v, want ErrConfig and wire.ErrSourceName", name, err)
		}
		if strings.ContainsAny(err.Error(), "\x1b\n\u009b\u202e") {
			t.Errorf("%q: the error repeats the name unescaped: %q", name, err)
		}
	}
}
