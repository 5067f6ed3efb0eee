package leakybucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A raised limit given with a request: what the key used stays used, so
// the raise allows the difference at once.
func ExampleNewParams() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := leakybucket.New(store, leakybucket.Config{Capacity: 2, LeakRate: 1, Per: time.Hour})
	raised, err := leakybucket.NewParams(leakybucket.Config{Capacity: 4, LeakRate: 1, Per: time.Hour})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(ctx, "k")
		fmt.Println("own", d.Allowed, d.Remaining, d.Limit)
	}
	for i := 0; i < 3; i++ {
		d, _ := limiter.Decide(ctx, core.Request{Key: "k", N: 1, Params: []core.Params{raised}})
		fmt.Println("raised", d.Allowed, d.Remaining, d.Limit)
	}
	// Output:
	// own true 1 2
	// own true 0 2
	// own false 0 2
	// raised true 1 4
	// raised true 0 4
	// raised false 0 4
}
