package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A Waiter's Sleep is injected: here it moves a fake clock instead of
// waiting, so a simulation or a test runs at once. Each sleep is the
// denial's RetryAfter.
func ExampleWaiter_Wait() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	w := core.Waiter{Sleep: func(ctx context.Context, d time.Duration) error {
		fmt.Println("sleep", d)
		clock.Advance(d)
		return nil
	}}
	for i := 0; i < 3; i++ {
		d, err := w.Wait(context.Background(), limiter, "job", 1)
		fmt.Println(d.Allowed, err)
	}
	// Output:
	// true <nil>
	// sleep 1s
	// true <nil>
	// sleep 1s
	// true <nil>
}
