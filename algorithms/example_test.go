package algorithms_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// Every algorithm and its parameters, then one picked by name and built
// from its defaults with a burst of 2.
func Example() {
	for _, a := range algorithms.All {
		fmt.Printf("%s (%s):", a.Name, a.Title)
		for _, p := range a.Params {
			switch p.Kind {
			case algorithms.Duration:
				fmt.Printf(" %s=%v", p.Name, time.Duration(p.Default))
			case algorithms.Choice:
				fmt.Printf(" %s=%s", p.Name, p.Choices()[p.Default])
			default:
				fmt.Printf(" %s=%d", p.Name, p.Default)
			}
		}
		fmt.Println()
	}

	store, _ := memory.New()
	defer store.Close()
	a, _ := algorithms.Lookup("gcra")
	p := a.Defaults()
	p[a.Limit().Name] = 2 // burst
	limiter, err := a.New(store, p, nil, "")
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, d.Remaining, d.Limit)
	}
	// Output:
	// tokenbucket (Token bucket): capacity=5 refill_rate=1 refill_interval=2s carry=used
	// fixedwindow (Fixed window counter): limit=5 window=10s aligned=false
	// slidinglog (Sliding window log): limit=5 window=10s
	// slidingcounter (Sliding window counter): limit=5 window=10s
	// leakybucket (Leaky bucket (policing)): capacity=5 leak_rate=1 per=2s carry=used
	// gcra (GCRA): rate=1 period=2s burst=5 carry=used
	// true 1 2
	// true 0 2
	// false 0 2
}

// Limits read from a configuration by name, given with each request to a
// limiter of the algorithm, as rules files and databases hold them.
func ExampleAlgorithm_NewParams() {
	store, _ := memory.New()
	defer store.Close()
	a, _ := algorithms.Lookup("fixedwindow")
	limiter, err := a.New(store, a.Defaults(), nil, "")
	if err != nil {
		panic(err)
	}
	p, err := a.NewParams(algorithms.Params{"limit": 2, "window": int64(30 * time.Second), "aligned": 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(p)
	for i := 0; i < 3; i++ {
		d, _ := limiter.Decide(context.Background(), core.Request{Key: "k", N: 1, Params: []core.Params{p}})
		fmt.Println(d.Allowed, d.Limit, d.Window)
	}
	_, err = a.NewParams(algorithms.Params{"limit": 2, "window": int64(30 * time.Second), "aligned": 2})
	fmt.Println(err)
	// Output:
	// fixedwindow{Limit: 2, Window: 30s, Aligned: true}
	// true 2 30s
	// true 2 30s
	// false 2 30s
	// ratekit: invalid config: fixedwindow: Aligned must be one of its 2 values (0 to 1: false, true), got 2
}
