package gcra_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A customer's limit, given with each request: the key keeps what it
// used when its limit is raised (ratekit.CarryUsed), so the raise helps at
// once, and a faster rate never denies what the slower one allowed.
func ExampleNewParams() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Second, Burst: 1, Clock: clock})
	basic, _ := gcra.NewParams(gcra.Config{Rate: 10, Period: time.Minute, Burst: 3})
	premium, err := gcra.NewParams(gcra.Config{Rate: 100, Period: time.Minute, Burst: 5})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		d, _ := limiter.Decide(ctx, core.Request{Key: "customer:7", N: 1, Params: []core.Params{basic}})
		fmt.Println("basic", d.Allowed, d.Remaining, d.Limit)
	}
	d, _ := limiter.Decide(ctx, core.Request{Key: "customer:7", N: 1, Params: []core.Params{premium}})
	fmt.Println("premium", d.Allowed, d.Remaining, d.Limit)
	fmt.Println(premium)
	// Output:
	// basic true 2 3
	// basic true 1 3
	// basic true 0 3
	// basic false 0 3
	// premium true 1 5
	// gcra{Rate: 100, Period: 1m0s, Burst: 5, Carry: used}
}
