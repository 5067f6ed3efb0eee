package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// With the background sweep off, an expired key reads as absent but
// stays in memory until Sweep drops it (or it is written again).
func ExampleWithSweepInterval() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := fixedwindow.New(store, fixedwindow.Config{Limit: 10, Window: time.Second})
	if err != nil {
		panic(err)
	}
	if _, err := limiter.Allow(context.Background(), "user:42"); err != nil {
		panic(err)
	}
	fmt.Println("held:", store.Len())
	clock.Advance(time.Minute) // the window, and its key, expired long ago
	fmt.Println("held after expiry:", store.Len())
	fmt.Println("swept:", store.Sweep(), "held:", store.Len())
	// Output:
	// held: 1
	// held after expiry: 1
	// swept: 1 held: 0
}
