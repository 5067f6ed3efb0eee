package hotkey_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/store/memory"
)

// A global limit of 1,000 requests per second, in bursts of 100, shared
// by every process (here the memory store stands in for Redis, and a
// manual clock for time). Each process puts a Budget in front of it and
// decides locally from leases of 10 units.
func Example() {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limit, err := gcra.New(store, gcra.Config{Rate: 1000, Period: time.Second, Burst: 100, Clock: clock})
	if err != nil {
		panic(err)
	}
	budget, err := hotkey.New(limit, hotkey.Config{Lease: 10, TTL: 100 * time.Millisecond, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer budget.Close(ctx)

	allowed := 0
	for range 25 {
		if d, _ := budget.Allow(ctx, "global"); d.Allowed {
			allowed++
		}
	}
	st := budget.Stats()
	fmt.Printf("%d allowed from %d leases of %d units in all\n", allowed, st.Leases, st.Granted)
	d, _ := limit.Peek(ctx, "global")
	fmt.Println("the store has", d.Remaining, "left")
	// Output:
	// 25 allowed from 3 leases of 30 units in all
	// the store has 70 left
}

// Close gives the unused units of live leases back to the store.
func ExampleBudget_Close() {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limit, _ := gcra.New(store, gcra.Config{Rate: 1000, Period: time.Second, Burst: 100, Clock: clock})
	budget, _ := hotkey.New(limit, hotkey.Config{Lease: 10, TTL: 100 * time.Millisecond, Clock: clock})

	for range 4 {
		budget.Allow(ctx, "global")
	}
	d, _ := limit.Peek(ctx, "global")
	fmt.Println("leased:", d.Remaining, "left in the store")
	if err := budget.Close(ctx); err != nil {
		panic(err)
	}
	d, _ = limit.Peek(ctx, "global")
	fmt.Println("closed:", d.Remaining, "left in the store")
	fmt.Printf("%+v\n", budget.Stats())
	// Output:
	// leased: 90 left in the store
	// closed: 96 left in the store
	// {Keys:1 Leases:1 Granted:10 Refunded:6 Lost:0 Held:0 Direct:0}
}

// At the limit the store's denial is repeated in process until its
// RetryAfter, which counts down.
func ExampleBudget_AllowN() {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	// 10 per second in bursts of 5.
	limit, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5, Clock: clock})
	budget, _ := hotkey.New(limit, hotkey.Config{Lease: 4, TTL: time.Second, Clock: clock})

	for i := 1; i <= 6; i++ {
		d, _ := budget.AllowN(ctx, "global", 1)
		fmt.Println(i, d.Allowed, d.RetryAfter)
	}
	clock.Advance(40 * time.Millisecond)
	d, _ := budget.AllowN(ctx, "global", 1) // denied in process
	fmt.Println(7, d.Allowed, d.RetryAfter)
	clock.Advance(60 * time.Millisecond)
	d, _ = budget.AllowN(ctx, "global", 1)
	fmt.Println(8, d.Allowed, d.RetryAfter)
	// Output:
	// 1 true 0s
	// 2 true 0s
	// 3 true 0s
	// 4 true 0s
	// 5 true 0s
	// 6 false 100ms
	// 7 false 60ms
	// 8 true 0s
}

// With MinLease below Lease, a key's lease size adapts to its demand: it
// starts at MinLease and doubles while leases are spent within half their
// TTL, so a busy key asks the store less and less often.
func ExampleNew() {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limit, err := gcra.New(store, gcra.Config{Rate: 100_000, Period: time.Second, Burst: 10_000, Clock: clock})
	if err != nil {
		panic(err)
	}
	budget, err := hotkey.New(limit, hotkey.Config{Lease: 64, MinLease: 4, TTL: 100 * time.Millisecond, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer budget.Close(ctx)

	for range 200 {
		if _, err := budget.Allow(ctx, "global"); err != nil {
			panic(err)
		}
	}
	st := budget.Stats()
	fmt.Printf("200 requests, %d leases of %d units in all\n", st.Leases, st.Granted) // 4, 8, 16, 32, then 64
	// Output: 200 requests, 7 leases of 252 units in all
}
