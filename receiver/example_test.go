package receiver_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"umstore/internal/devstores"
	"umstore/publisher"
	"umstore/receiver"
)

// send publishes payloads on source and waits until they are stable.
func send(ctx context.Context, groups [][]string, source string, payloads ...string) error {
	cfg := publisher.DefaultConfig()
	cfg.Source, cfg.Groups = source, groups
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, s := range payloads {
		if _, err := p.Send(ctx, []byte(s)); err != nil {
			return err
		}
	}
	return p.WaitAllGroups(ctx)
}

// sendAndFlush sends payloads on source and waits until every group serves
// them, so the examples have something to read. A group acknowledges a
// message once a quorum of its stores has it in its log, a moment before
// its leader's repository serves it (ARCHITECTURE.md, "The path of one
// message", step 5): hence the wait for High.
func sendAndFlush(ctx context.Context, groups [][]string, source string, payloads ...string) {
	if err := send(ctx, groups, source, payloads...); err != nil {
		log.Fatal(err)
	}
	for _, addrs := range groups {
		cfg := receiver.DefaultConfig()
		cfg.Source, cfg.Groups = source, [][]string{addrs}
		r, err := receiver.New(cfg)
		if err != nil {
			log.Fatal(err)
		}
		for {
			if high, err := r.High(ctx); err == nil && high >= uint64(len(payloads)) {
				break
			}
			select {
			case <-ctx.Done():
				log.Fatal(ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
		r.Close()
	}
}

// Read a source from its first message to its last, each from whichever
// group holds it. The stores run inside the example; a program gets Groups
// from its deployment file instead.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stores, err := devstores.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer stores.Stop()
	sendAndFlush(ctx, stores.Groups(), "orders", "apples", "pears", "plums")

	cfg := receiver.DefaultConfig()
	cfg.Source = "orders"
	cfg.Groups = stores.Groups()
	r, err := receiver.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	high, err := r.High(ctx) // the highest sequence number any group holds
	if err != nil {
		log.Fatal(err)
	}
	err = r.Read(ctx, 1, high, func(m receiver.Message) error {
		fmt.Println(m.Seq, string(m.Payload))
		return nil
	})
	if err != nil { // a *receiver.MissingError names ranges no group holds
		log.Fatal(err)
	}
	// Output:
	// 1 apples
	// 2 pears
	// 3 plums
}

// Follow a source: everything from a sequence number on, then new messages
// as the groups commit them, until the context ends.
func ExampleReceiver_Follow() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stores, err := devstores.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer stores.Stop()
	sendAndFlush(ctx, stores.Groups(), "ticks", "one", "two")

	cfg := receiver.DefaultConfig()
	cfg.Source = "ticks"
	cfg.Groups = stores.Groups()
	r, err := receiver.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	follow, stop := context.WithCancel(ctx)
	defer stop()
	live := make(chan error, 1)
	err = r.Follow(follow, 1, func(m receiver.Message) error {
		fmt.Println(m.Seq, string(m.Payload))
		if m.Seq == 2 {
			go func() { live <- send(ctx, stores.Groups(), "ticks", "three") }() // a new message, delivered live
		}
		if m.Seq == 3 {
			stop()
		}
		return nil
	}, func(missing receiver.Range) {
		fmt.Println("lost:", missing) // no reachable group holds them
	})
	fmt.Println(err)
	if err := <-live; err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 one
	// 2 two
	// 3 three
	// context canceled
}
