package tokenbucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A burst of 3, then one token every second.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		d, _ := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	// 100 requests per minute, in bursts of up to 20.
	_, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 20, RefillRate: 100, RefillInterval: time.Minute})
	fmt.Println(err)
	_, err = tokenbucket.New(store, tokenbucket.Config{Capacity: 20, RefillRate: 0, RefillInterval: time.Minute})
	fmt.Println(err)
	// Output:
	// <nil>
	// ratekit: invalid config: RefillRate must be positive, got 0
}

// A fixed clock makes the waits exact.
func Example_allowN() {
	store, _ := memory.New()
	defer store.Close()
	clock := core.ClockFunc(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) })
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 2, RefillInterval: time.Second, Clock: clock})
	ctx := context.Background()
	d, _ := limiter.AllowN(ctx, "upload", 7)
	fmt.Println(d.Allowed, d.Remaining, d.ResetAfter)
	d, _ = limiter.AllowN(ctx, "upload", 6)
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	// Output:
	// true 3 4s
	// false 3 2s
}

func Example_peek() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second})
	ctx := context.Background()
	limiter.AllowN(ctx, "k", 2)
	d, _ := limiter.Peek(ctx, "k") // counts nothing
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.Peek(ctx, "k")
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 3
	// true 3
}

func Example_reset() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour})
	ctx := context.Background()
	limiter.Allow(ctx, "k")
	d, _ := limiter.Allow(ctx, "k")
	fmt.Println(d.Allowed)
	limiter.Reset(ctx, "k")
	d, _ = limiter.Allow(ctx, "k")
	fmt.Println(d.Allowed)
	// Output:
	// false
	// true
}

// Many keys in one call: one pipelined round trip on Redis. Requests on
// one key see each other, in order; each result has its own error.
func Example_allowMany() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour})
	results := limiter.AllowMany(context.Background(), []core.Request{
		{Key: "alice", N: 2},
		{Key: "bob", N: 1},
		{Key: "alice", N: 1},
		{Key: "", N: 1},
	})
	for _, r := range results {
		fmt.Println(r.Decision.Allowed, r.Decision.Remaining, r.Err)
	}
	// Output:
	// true 0 <nil>
	// true 1 <nil>
	// false 0 <nil>
	// false 0 ratekit: invalid key: key is empty
}
