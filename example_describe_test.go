package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A limiter says which algorithm it runs and on which store: what
// metrics and traces label its decisions with.
func ExampleLimiter_Algorithm() {
	store, _ := memory.New()
	defer store.Close()
	lim, err := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5})
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.Algorithm(), lim.Store().(core.StoreNamer).StoreName())
	// Output: gcra memory
}

// MaxCost is the largest cost a request may have: a GCRA limiter's burst.
func ExampleLimiter_MaxCost() {
	store, _ := memory.New()
	defer store.Close()
	lim, err := gcra.New(store, gcra.Config{Rate: 10, Period: time.Second, Burst: 5})
	if err != nil {
		panic(err)
	}
	_, err = lim.AllowN(context.Background(), "user:42", lim.MaxCost()+1)
	fmt.Println(lim.MaxCost(), errors.Is(err, core.ErrInvalidCost))
	// Output: 5 true
}
