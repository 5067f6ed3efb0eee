package fakeclock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A test drives a limiter's time, and the memory store's TTLs, by hand.
func Example() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	lim, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Minute, Clock: clock})
	ctx := context.Background()
	d, _ := lim.Allow(ctx, "k")
	fmt.Println(d.Allowed)
	d, _ = lim.Allow(ctx, "k")
	fmt.Println(d.Allowed, d.RetryAfter)
	clock.Advance(time.Minute)
	d, _ = lim.Allow(ctx, "k")
	fmt.Println(d.Allowed)
	// Output:
	// true
	// false 1m0s
	// true
}
