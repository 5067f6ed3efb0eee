package denycache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A cached denial counts its RetryAfter down on the cache's clock, and
// ends when it reaches zero: then the store is asked again.
func ExampleWithClock() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 1, Clock: clock})
	if err != nil {
		panic(err)
	}
	cached, err := denycache.New(limiter, denycache.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, step := range []time.Duration{0, 0, 20 * time.Second, 40 * time.Second} {
		clock.Advance(step)
		d, err := cached.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.RetryAfter, cached.Hits())
	}
	// Output:
	// true 0s 0
	// false 1m0s 0
	// false 40s 1
	// true 0s 1
}

// Forget drops this process's cached denial of a key, after the
// application has reset or raised its limit, say: the next call asks
// the store.
func ExampleLimiter_Forget() {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 1})
	if err != nil {
		panic(err)
	}
	cached, err := denycache.New(limiter)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := cached.Allow(ctx, "user:42"); err != nil {
			panic(err)
		}
	}
	if err := limiter.Reset(ctx, "user:42"); err != nil { // the store's state, on every process
		panic(err)
	}
	cached.Forget("user:42") // this process's cached denial
	d, err := cached.Allow(ctx, "user:42")
	fmt.Println(d.Allowed, err, cached.Hits())
	// Output:
	// true <nil> 0
}
