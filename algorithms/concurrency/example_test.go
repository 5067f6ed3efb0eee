package concurrency_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// At most two reports in flight per tenant: a third waits for a slot.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := concurrency.New(store, concurrency.Config{Limit: 2, TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, _, _ := limiter.Acquire(ctx, "tenant:7")
	b, _, _ := limiter.Acquire(ctx, "tenant:7")
	_, d, _ := limiter.Acquire(ctx, "tenant:7")
	fmt.Println("third allowed:", d.Allowed, "remaining:", d.Remaining)

	released, _ := limiter.Release(ctx, a)
	_, d, _ = limiter.Acquire(ctx, "tenant:7")
	fmt.Println("after a release:", released, d.Allowed)
	limiter.Release(ctx, b)
	// Output:
	// third allowed: false remaining: 0
	// after a release: true true
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	_, err := concurrency.New(store, concurrency.Config{Limit: 10, TTL: 0})
	fmt.Println(err)
	// Output: ratekit: invalid config: TTL must be positive, got 0s
}

// A denial says how long until the oldest lease expires; a holder that
// never releases (it crashed) frees its slot after TTL.
func ExampleLimiter_Acquire() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 1, TTL: 30 * time.Second, Clock: clock})
	ctx := context.Background()
	limiter.Acquire(ctx, "job") // never released
	clock.Advance(10 * time.Second)
	_, d, _ := limiter.Acquire(ctx, "job")
	fmt.Println(d.Allowed, d.RetryAfter)
	clock.Advance(d.RetryAfter)
	_, d, _ = limiter.Acquire(ctx, "job")
	fmt.Println(d.Allowed)
	// Output:
	// false 20s
	// true
}

// A request may weigh more than one slot: here the cost is the number of
// megabytes a job buffers, 100 per key.
func ExampleLimiter_AcquireN() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 100, TTL: time.Minute})
	ctx := context.Background()
	big, d, _ := limiter.AcquireN(ctx, "buffers", 80)
	fmt.Println(d.Allowed, d.Remaining)
	_, d, _ = limiter.AcquireN(ctx, "buffers", 30)
	fmt.Println(d.Allowed, d.Remaining)
	limiter.Release(ctx, big)
	_, d, _ = limiter.AcquireN(ctx, "buffers", 30)
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 20
	// false 20
	// true 70
}

// Releasing says whether the lease was live; a second release, or a
// lease of another key, frees nothing.
func ExampleLimiter_Release() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 1, TTL: time.Minute})
	ctx := context.Background()
	lease, _, _ := limiter.Acquire(ctx, "k")
	other := lease
	other.Key = "another"
	fmt.Println(limiter.Release(ctx, other))
	fmt.Println(limiter.Release(ctx, lease))
	fmt.Println(limiter.Release(ctx, lease))
	// Output:
	// false <nil>
	// true <nil>
	// false <nil>
}

// A long request extends its lease before the TTL runs out.
func ExampleLimiter_Extend() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 1, TTL: 10 * time.Second, Clock: clock})
	ctx := context.Background()
	lease, _, _ := limiter.Acquire(ctx, "export")
	clock.Advance(8 * time.Second)
	fmt.Println(limiter.Extend(ctx, lease)) // now lives until 18 s
	clock.Advance(8 * time.Second)
	d, _ := limiter.Peek(ctx, "export")
	fmt.Println(d.Allowed, d.RetryAfter)
	clock.Advance(2 * time.Second)
	fmt.Println(limiter.Extend(ctx, lease)) // expired: too late
	// Output:
	// true <nil>
	// false 2s
	// false <nil>
}

// Peek reads the cost in flight without acquiring: Limit - Remaining.
func ExampleLimiter_Peek() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 5, TTL: time.Minute})
	ctx := context.Background()
	limiter.AcquireN(ctx, "k", 3)
	d, _ := limiter.Peek(ctx, "k")
	fmt.Println("in flight:", d.Limit-d.Remaining)
	// Output: in flight: 3
}

// Reset frees every slot of a key at once.
func ExampleLimiter_Reset() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 1, TTL: time.Minute})
	ctx := context.Background()
	lease, _, _ := limiter.Acquire(ctx, "k")
	limiter.Reset(ctx, "k")
	_, d, _ := limiter.Acquire(ctx, "k")
	fmt.Println(d.Allowed)
	fmt.Println(limiter.Release(ctx, lease))
	// Output:
	// true
	// false <nil>
}

// What instrumentation labels a limiter's calls with: fixed per limiter.
func ExampleLimiter_Algorithm() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := concurrency.New(store, concurrency.Config{Limit: 8, TTL: time.Minute})
	fmt.Println(limiter.Algorithm(), limiter.Store().(core.StoreNamer).StoreName(), limiter.Limit(), limiter.TTL())
	// Output: concurrency memory 8 1m0s
}
