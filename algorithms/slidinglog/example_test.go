package slidinglog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// An exact rolling window: 2 requests in any 10 seconds.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := core.ClockFunc(func() time.Time { return now })
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := slidinglog.New(store, slidinglog.Config{Limit: 2, Window: 10 * time.Second, Clock: clock})
	ctx := context.Background()
	for _, at := range []time.Duration{0, 4 * time.Second, 6 * time.Second, 10 * time.Second} {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(at)
		d, _ := limiter.Allow(ctx, "k")
		fmt.Println(at, d.Allowed, d.RetryAfter)
	}
	// Output:
	// 0s true 0s
	// 4s true 0s
	// 6s false 4s
	// 10s true 0s
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	_, err := slidinglog.New(store, slidinglog.Config{Limit: 1_000_000, Window: time.Hour})
	fmt.Println(err)
	// Output: ratekit: invalid config: Limit 1000000 needs up to 1000000 log entries per key, more than MaxLimit (10000); use slidingcounter or gcra for large limits
}
