package ratekit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
)

// Two limits on one key, decided together: a burst of 5 refilled every
// second, and 3 per day. The fourth request is denied by the daily limit;
// the token bucket would have allowed it, and counts nothing.
func ExampleMulti() {
	store, _ := memory.New()
	defer store.Close()
	burst, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 5, RefillInterval: time.Second, Prefix: "ex:burst:"})
	daily, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 3, Window: 24 * time.Hour, Prefix: "ex:daily:"})
	both, err := ratekit.NewMulti(burst, daily)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		ds, _ := both.AllowN(ctx, "user:42", 1)
		fmt.Println(ratekit.Allowed(ds), ds[0].Allowed, ds[1].Allowed)
	}
	d, _ := burst.Peek(ctx, "user:42")
	fmt.Println("tokens left:", d.Remaining)
	// Output:
	// true true true
	// true true true
	// true true true
	// false true false
	// tokens left: 2
}

// Call shows the script a decision sends, to load it in redis-cli or
// measure it with redis-benchmark.
func ExampleLimiter_Call() {
	store, _ := memory.New()
	defer store.Close()
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second})
	c, _ := lim.Call("user:42", 1)
	fmt.Println(c.Script.Name(), c.Keys, c.Args) // now = -1: the server's TIME
	// Output: tokenbucket [ratekit:tb:{user:42}] [-1 1 0 10 1 1000000]
}

// Coalesce gathers the calls many goroutines make at once into batch
// script calls; decisions, keys and state are those of the limiter it
// wraps. (On the memory store it only adds work: use it on Redis.)
func ExampleCoalesce() {
	store, _ := memory.New()
	defer store.Close()
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour})
	coalesced := ratekit.Coalesce(lim)
	ctx := context.Background()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if d, err := coalesced.Allow(ctx, "tenant:7"); err == nil && d.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	d, _ := lim.Peek(ctx, "tenant:7") // the same key, the same state
	fmt.Println(allowed.Load(), "of 160 allowed;", d.Remaining, "left")
	// Output: 100 of 160 allowed; 0 left
}
