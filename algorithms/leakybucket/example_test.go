package leakybucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/store/memory"
)

// A bucket of 2 that drains one request per second: a third request at
// once overflows and is rejected.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := leakybucket.New(store, leakybucket.Config{Capacity: 2, LeakRate: 1, Per: time.Second})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(context.Background(), "k")
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	// Half a request per second: 1 per 2 s.
	_, err := leakybucket.New(store, leakybucket.Config{Capacity: 5, LeakRate: 1, Per: 2 * time.Second})
	fmt.Println(err)
	// Output: <nil>
}
