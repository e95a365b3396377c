package publisher_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"umstore/internal/devstores"
	"umstore/publisher"
)

// Publish three messages and wait until they are stable. The stores here
// run inside the example (two groups of three, as `umstored dev` runs
// them); a program gets Groups from its deployment file instead.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stores, err := devstores.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer stores.Stop()

	cfg := publisher.DefaultConfig()
	cfg.Source = "orders"
	cfg.Groups = stores.Groups() // per group, its stores' client addresses
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	for _, order := range []string{"apples", "pears", "plums"} {
		seq, err := p.Send(ctx, []byte(order))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("sent", seq, order)
	}
	if err := p.Flush(ctx); err != nil { // every message sent so far is stable
		log.Fatal(err)
	}
	fmt.Println("stable through", p.Stats().Stable)
	// Output:
	// sent 1 apples
	// sent 2 pears
	// sent 3 plums
	// stable through 3
}

// UM's flight size notification and per-group stability events: with
// FlightNotify, Send goes on past FlightSize and OnFlightSize hears when
// the flight goes over and back under; OnGroupStable hears each group
// confirm.
func ExampleConfig_events() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stores, err := devstores.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer stores.Stop()

	confirmed := make(chan publisher.GroupStable, 100)
	flight := make(chan publisher.FlightEvent, 100)
	cfg := publisher.DefaultConfig()
	cfg.Source = "events"
	cfg.Groups = stores.Groups()
	cfg.FlightSize = 2
	cfg.Flight = publisher.FlightNotify
	cfg.OnFlightSize = func(e publisher.FlightEvent) { flight <- e }
	cfg.OnGroupStable = func(e publisher.GroupStable) { confirmed <- e }
	p, err := publisher.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	for range 5 { // never blocks: the third send finds the flight full
		if _, err := p.Send(ctx, []byte("tick")); err != nil {
			log.Fatal(err)
		}
	}
	if err := p.WaitAllGroups(ctx); err != nil {
		log.Fatal(err)
	}
	through := map[int]uint64{}
	for through[1] < 5 || through[2] < 5 {
		e := <-confirmed
		through[e.Group] = e.Last
	}
	fmt.Println("group 1 confirmed through", through[1])
	fmt.Println("group 2 confirmed through", through[2])
	fmt.Println("flight", (<-flight).State) // the first event
	for e := range flight {                 // ... and, once all is stable, the last
		if e.State == publisher.FlightUnder && len(flight) == 0 {
			fmt.Println("flight", e.State)
			break
		}
	}
	// Output:
	// group 1 confirmed through 5
	// group 2 confirmed through 5
	// flight over
	// flight under
}
