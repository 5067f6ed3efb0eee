package tokenbucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// Limits per customer, built once from their records and given with each
// request: no limiter per customer.
func ExampleNewParams() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	contracts := map[string][]core.Params{}
	for customer, burst := range map[string]int64{"acme": 3, "globex": 1} {
		p, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: burst, RefillRate: 1, RefillInterval: time.Minute})
		if err != nil {
			panic(err)
		}
		contracts[customer] = []core.Params{p}
	}
	ctx := context.Background()
	for _, customer := range []string{"acme", "acme", "acme", "acme", "globex", "globex"} {
		d, _ := limiter.Decide(ctx, core.Request{Key: customer, N: 1, Params: contracts[customer]})
		fmt.Println(customer, d.Allowed, d.Remaining, d.Limit)
	}
	// Output:
	// acme true 2 3
	// acme true 1 3
	// acme true 0 3
	// acme false 0 3
	// globex true 0 1
	// globex false 0 1
}

// A raised Capacity gives what the key did not use at once with
// ratekit.CarryUsed (the default); with ratekit.CarryAvailable, the key
// keeps what it had.
func ExampleConfig_carry() {
	store, _ := memory.New()
	defer store.Close()
	ctx := context.Background()
	for _, carry := range []ratekit.Carry{ratekit.CarryUsed, ratekit.CarryAvailable} {
		limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Hour, Prefix: carry.String() + ":"})
		limiter.AllowN(ctx, "k", 8) // 2 left of 10
		raised, _ := tokenbucket.NewParams(tokenbucket.Config{Capacity: 15, RefillRate: 1, RefillInterval: time.Hour, Carry: carry})
		d, _ := limiter.Decide(ctx, core.Request{Key: "k", N: 1, Op: core.OpPeek, Params: []core.Params{raised}})
		fmt.Println(carry, d.Remaining)
	}
	// Output:
	// used 7
	// available 2
}
