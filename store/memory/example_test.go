package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
)

func ExampleNew() {
	store, err := memory.New(memory.WithSweepInterval(time.Minute))
	if err != nil {
		panic(err)
	}
	defer store.Close() // stops the background sweep
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second})
	d, _ := limiter.Allow(context.Background(), "k")
	fmt.Println(d.Allowed, d.Remaining, store.Len())
	// Output: true 1 1
}
