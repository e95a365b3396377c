package publisher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"umstore/internal/clustertest"
	"umstore/publisher"
)

// A registration the stores refuse for a reason every store gives alike is
// reported as that refusal, in the store's words, at once: not as too few
// groups answering after the caller's time-out.
func TestRefusedRegistrationIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, 2, nil) // stores that do not allow receiver-paced persistence
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = "paced", c.Addrs()
	cfg.ReceiverPaced = publisher.PacingBlocking
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	p, err := publisher.New(ctx, cfg)
	took := time.Since(start)
	if err == nil {
		p.Close()
		t.Fatal("a receiver-paced publisher registered with stores that do not allow it")
	}
	if !errors.Is(err, publisher.ErrRefused) || !strings.Contains(err.Error(), "--allow-receiver-paced-persistence") {
		t.Fatalf("err = %v, want ErrRefused with the store's reason", err)
	}
	if took > 3*time.Second {
		t.Fatalf("the refusal took %v to reach the caller, want it at once (within 3s)", took)
	}
	t.Logf("refused after %v: %v", took, err)
}
