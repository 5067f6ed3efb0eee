package fixedwindow_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A limit given with each request: the window counts what happened, so a
// raised limit allows the difference at once.
func ExampleNewParams() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 2, Window: time.Minute})
	raised, err := fixedwindow.NewParams(fixedwindow.Config{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(ctx, "k")
		fmt.Println("own", d.Allowed, d.Remaining)
	}
	d, _ := limiter.Decide(ctx, core.Request{Key: "k", N: 1, Params: []core.Params{raised}})
	fmt.Println("raised", d.Allowed, d.Remaining, d.Limit)
	// Output:
	// own true 1
	// own true 0
	// own false 0
	// raised true 0 3
}

// Windows aligned to the epoch, as envoyproxy/ratelimit's: every key's
// minute starts on the minute.
func ExampleConfig_aligned() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 12, 0, 45, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Minute, Aligned: true, Clock: clock})
	d, _ := limiter.Allow(context.Background(), "k")
	fmt.Println(d.Allowed, d.ResetAfter) // the window ends at 12:01:00
	// Output: true 15s
}

// A calendar window given with a request, to a limiter with a Clock.
func ExampleNewCalendarParams() {
	clock := fakeclock.New(time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC))
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	limiter, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 100, Window: time.Hour, Clock: clock})
	monthly, err := fixedwindow.NewCalendarParams(fixedwindow.CalendarConfig{Limit: 1000, Period: fixedwindow.Month})
	if err != nil {
		panic(err)
	}
	d, _ := limiter.Decide(context.Background(), core.Request{Key: "k", N: 1, Params: []core.Params{monthly}})
	fmt.Println(d.Allowed, d.Remaining, d.ResetAfter)
	// Output: true 999 1h0m0s
}
