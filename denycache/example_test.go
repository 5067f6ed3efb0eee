package denycache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/store/memory"
)

func ExampleNew() {
	store, _ := memory.New() // in production: a Redis store
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Minute, Burst: 1})
	cached := denycache.New(limiter)
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
