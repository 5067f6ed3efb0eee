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

func ExampleNew() {
	store, _ := memory.New() // in production: a Redis store
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 1})
	cached, err := denycache.New(limiter)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, _ := cached.Allow(ctx, "abuser") // the 3rd never reaches the store
		fmt.Println(d.Allowed)
	}
	// Output:
	// true
	// false
	// false
}

// The cache's clock is injected for tests, and its size bounded: past
// WithMaxKeys keys, denials go uncached until old ones end.
func ExampleWithMaxKeys() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 1, Clock: clock})
	cached, err := denycache.New(limiter, denycache.WithMaxKeys(1), denycache.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, key := range []string{"a", "b"} {
		for range 3 {
			cached.Allow(ctx, key)
		}
	}
	// a's third call was answered here; b found the cache full.
	fmt.Println(cached.Hits())
	// Output: 1
}
