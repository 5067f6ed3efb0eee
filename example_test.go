package ratekit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
)

// Coalesce gathers the calls many goroutines make at once into batch
// script calls; decisions, keys and state are those of the limiter it
// wraps. (On the memory store it only adds work: use it on Redis.)
func ExampleCoalesce() {
	store, _ := memory.New()
	defer store.Close()
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour})
	coalesced, err := ratekit.Coalesce(lim)
	if err != nil {
		panic(err)
	}
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
