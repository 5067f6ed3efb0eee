package gcra_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/store/memory"
)

// 10 requests per second in bursts of up to 5, as go-redis/redis_rate's
// PerSecond(10) with burst 5.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 6; i++ {
		d, _ := limiter.Allow(context.Background(), "api:key1")
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 4
	// true 3
	// true 2
	// true 1
	// true 0
	// false 0
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	_, err := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second})
	fmt.Println(err)
	// Output: ratekit: invalid config: Burst must be positive, got 0
}

// A batch of 8 gets what fits: the burst of 5.
func Example_allowAtMost() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5})
	granted, d, err := limiter.AllowAtMost(context.Background(), "batch", 8)
	fmt.Println(granted, d.Remaining, err)
	// Output: 5 0 <nil>
}
