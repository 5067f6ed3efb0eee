package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// Where to start: an algorithm on a store, asked about each request. A
// bucket of 3 tokens, refilled at one a second, lets a burst of 3
// through and denies the fourth (its RetryAfter says how long to wait).
func Example() {
	store, err := memory.New() // in process; a Redis store in production
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		d, err := limiter.Allow(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}

// AllowAtMost grants as much of a request as fits now: GCRA's burst of 5
// grants 5 of 8. Algorithms that cannot grant part of a request say so
// with errors.ErrUnsupported, and send nothing.
func ExampleLimiter_AllowAtMost() {
	store, _ := memory.New()
	defer store.Close()
	ctx := context.Background()
	limiter, err := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5})
	if err != nil {
		panic(err)
	}
	granted, d, err := limiter.AllowAtMost(ctx, "export:7", 8)
	fmt.Println(granted, d.Remaining, err)

	bucket, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	_, _, err = bucket.AllowAtMost(ctx, "export:7", 8)
	fmt.Println(errors.Is(err, errors.ErrUnsupported))
	// Output:
	// 5 0 <nil>
	// true
}

// AllowMany decides many requests in one call, each as AllowN would, in
// order: the second request on "alice" sees the first. Each result
// carries its own error.
func ExampleLimiter_AllowMany() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 2})
	if err != nil {
		panic(err)
	}
	results := limiter.AllowMany(context.Background(), []core.Request{
		{Key: "alice", N: 2},
		{Key: "bob", N: 1},
		{Key: "alice", N: 1},
		{Key: "carol", N: 3},
	})
	for _, r := range results {
		fmt.Println(r.Decision.Allowed, r.Decision.Remaining, errors.Is(r.Err, core.ErrInvalidCost))
	}
	// Output:
	// true 0 false
	// true 1 false
	// false 0 false
	// false 0 true
}
