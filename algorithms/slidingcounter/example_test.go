package slidingcounter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// The previous window's count fades out as the current window goes on.
func Example() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := core.ClockFunc(func() time.Time { return now })
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := slidingcounter.New(store, slidingcounter.Config{Limit: 10, Window: time.Minute, Clock: clock})
	ctx := context.Background()
	limiter.AllowN(ctx, "k", 10) // a full previous window
	for _, at := range []time.Duration{time.Minute, 75 * time.Second, 90 * time.Second} {
		now = start.Add(at)
		d, _ := limiter.Peek(ctx, "k")
		fmt.Println(at, d.Remaining)
	}
	// Output:
	// 1m0s 0
	// 1m15s 3
	// 1m30s 5
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	_, err := slidingcounter.New(store, slidingcounter.Config{Limit: 1_000_000, Window: 24 * time.Hour})
	fmt.Println(err != nil)
	// Output: true
}
