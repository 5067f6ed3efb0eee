package ratekit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// Decide takes what a request asks (Op) and the limits it brings
// (Params), for every kind of limiter and every wrapper.
func ExampleLimiter_Decide() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	gold, _ := tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Minute})
	ctx := context.Background()
	r := core.Request{Key: "tenant:7", N: 3, Params: []core.Params{gold}}
	d, _ := limiter.Decide(ctx, r)
	fmt.Println("allow", d.Allowed, d.Remaining, d.Limit)
	r.Op = core.OpRefund
	d, _ = limiter.Decide(ctx, r)
	fmt.Println("refund", d.Remaining)
	_, err := limiter.Decide(ctx, core.Request{Key: "tenant:7", N: 3}) // the limiter's own Capacity: 2
	fmt.Println(err)
	// Output:
	// allow true 2 5
	// refund 5
	// ratekit: invalid cost: n = 3 can never be allowed, the limit is 2
}

// Carry picks what a bucket keeps when its limit changes under it.
func ExampleCarry() {
	for _, c := range []ratekit.Carry{ratekit.CarryUsed, ratekit.CarryAvailable} {
		fmt.Println(int64(c), c)
	}
	fmt.Println(ratekit.Carries())
	// Output:
	// 0 used
	// 1 available
	// [used available]
}
