package fixedwindow_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/store/memory"
)

// 3 requests per minute, the window opening at the first one.
func Example() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := fixedwindow.New(store, fixedwindow.Config{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		d, _ := limiter.Allow(context.Background(), "ip:10.0.0.1")
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	_, err := fixedwindow.New(store, fixedwindow.Config{Limit: 100, Window: 0})
	fmt.Println(err)
	// Output: ratekit: invalid config: Window must be positive, got 0s
}
