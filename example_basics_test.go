package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// Allow asks for one request: the fourth in a row is denied, and its
// RetryAfter is the exact wait, after which it passes.
func ExampleLimiter_Allow() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) // moves only when told
	store, err := memory.New(memory.WithClock(clock))
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
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	clock.Advance(time.Second)
	d, err := limiter.Allow(ctx, "user:42")
	fmt.Println(d.Allowed, d.Remaining, err)
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 1s
	// true 0 <nil>
}

// AllowN asks for a request of cost n, counted all together or not at
// all: a denied request consumes nothing, so the token left is still
// there for a request of cost 1.
func ExampleLimiter_AllowN() {
	store, err := memory.New(memory.WithClock(fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, n := range []int64{2, 2, 1} {
		d, err := limiter.AllowN(ctx, "upload:7", n)
		if err != nil {
			panic(err)
		}
		fmt.Println(n, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// 2 true 1 0s
	// 2 false 1 1s
	// 1 true 0 0s
}

// Peek says what a request of cost 1 would get now, and counts nothing:
// two peeks in a row see the same state.
func ExampleLimiter_Peek() {
	store, err := memory.New(memory.WithClock(fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := limiter.Allow(ctx, "user:42"); err != nil {
		panic(err)
	}
	for i := 0; i < 2; i++ {
		d, err := limiter.Peek(ctx, "user:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 2
	// true 2
}

// Reset forgets a key: after it, the key's next request sees a full
// bucket again.
func ExampleLimiter_Reset() {
	store, err := memory.New(memory.WithClock(fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := limiter.AllowN(ctx, "user:42", 3); err != nil {
		panic(err)
	}
	d, err := limiter.Allow(ctx, "user:42")
	fmt.Println("before:", d.Allowed, d.Remaining, err)
	if err := limiter.Reset(ctx, "user:42"); err != nil {
		panic(err)
	}
	d, err = limiter.Allow(ctx, "user:42")
	fmt.Println("after:", d.Allowed, d.Remaining, err)
	// Output:
	// before: false 0 <nil>
	// after: true 2 <nil>
}

// Store returns the store a limiter decides on, which names itself
// through core.StoreNamer.
func ExampleLimiter_Store() {
	store, err := memory.New(memory.WithClock(fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	if n, ok := limiter.Store().(core.StoreNamer); ok {
		fmt.Println(n.StoreName())
	}
	// Output:
	// memory
}

// Carries names what a bucket keeps when its limits change on a live
// key, as configuration files spell them.
func ExampleCarries() {
	fmt.Println(ratekit.Carries())
	// Output:
	// [used available]
}

// NewTiers checks that its policies have one shape, so that a key whose
// tier changes keeps its state: the same limits, by name and algorithm,
// with other numbers. Policies of other limits are refused.
func ExampleNewTiers() {
	store, _ := memory.New()
	defer store.Close()
	policy := func(name string, limit int64) *ratekit.Limiter {
		l, err := fixedwindow.New(store, fixedwindow.Config{Limit: limit, Window: time.Minute, Prefix: "ex:newtiers:"})
		if err != nil {
			panic(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: name, Limiter: l}}})
		if err != nil {
			panic(err)
		}
		return p
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"free": policy("minute", 10), "paid": policy("minute", 100)})
	fmt.Println(tiers.Names(), err)

	_, err = ratekit.NewTiers(map[string]*ratekit.Limiter{"free": policy("minute", 10), "paid": policy("per-minute", 100)})
	fmt.Println(errors.Is(err, core.ErrInvalidConfig))
	// Output:
	// [free paid] <nil>
	// true
}

// Policy returns a tier's policy; a tier the Tiers do not hold is an
// error wrapping ErrUnknownTier, for the caller to map to its default.
func ExampleTiers_Policy() {
	store, _ := memory.New()
	defer store.Close()
	l, err := fixedwindow.New(store, fixedwindow.Config{Limit: 10, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	free, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "minute", Limiter: l}}})
	if err != nil {
		panic(err)
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"free": free})
	if err != nil {
		panic(err)
	}
	p, err := tiers.Policy("free")
	fmt.Println(p == free, err)
	_, err = tiers.Policy("gold")
	fmt.Println(errors.Is(err, ratekit.ErrUnknownTier))
	// Output:
	// true <nil>
	// true
}
