package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

func ExampleNew() {
	store, err := memory.New(memory.WithSweepInterval(time.Minute))
	if err != nil {
		panic(err)
	}
	defer store.Close() // stops the background sweep
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second})
	d, _ := limiter.Allow(context.Background(), "k")
	fmt.Println(d.Allowed, d.Remaining, store.Len())
	// Output: true 1 1
}

// A test gives the store a manual clock: the scripts' server time and
// the keys' TTLs then move only when the test says.
func ExampleWithClock() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	// No Clock of its own: the limiter decides at the store's time.
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second})
	ctx := context.Background()
	d, _ := limiter.Allow(ctx, "k")
	fmt.Println(d.Allowed, d.ResetAfter)
	clock.Advance(2 * time.Second)
	fmt.Println(store.Sweep(), store.Len()) // the full bucket's key has expired
	// Output:
	// true 1s
	// 1 0
}
