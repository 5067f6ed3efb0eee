package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A script is Lua for Redis plus a Go twin for the memory store. This one
// counts calls per key.
func ExampleNewScript() {
	count := core.NewScript("count",
		`local n = redis.call('INCR', KEYS[1]); redis.call('PEXPIRE', KEYS[1], 60000); return {n}`,
		func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
			var n int64
			if v, ok := tx.Get(keys[0]); ok {
				n = v[0]
			}
			n++
			tx.Put(keys[0], 1, time.Minute)[0] = n
			return append(reply, n), nil
		}, false)

	var runner core.ScriptRunner
	store, _ := memory.New()
	defer store.Close()
	runner = store
	for i := 0; i < 2; i++ {
		reply, err := runner.RunScript(context.Background(), count, []string{"calls"}, nil, nil)
		fmt.Println(reply, err)
	}
	// Output:
	// [1] <nil>
	// [2] <nil>
}

func ExampleClockFunc() {
	fixed := core.ClockFunc(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) })
	fmt.Println(fixed.Now().Year())
	// Output: 2026
}

// Wait blocks until the limiter allows the request.
func ExampleWait() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: 10 * time.Millisecond})
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if _, err := core.Wait(ctx, limiter, "job", 1); err != nil {
			panic(err)
		}
	}
	fmt.Println(time.Since(start) >= 20*time.Millisecond)
	// Output: true
}

// A policy's decision names the limits that denied it, and those in
// shadow that would have.
func ExampleDecision_DeniedBy() {
	d := core.Decision{
		Allowed: false,
		Limits: []core.LimitDecision{
			{Name: "second", Decision: core.Decision{Allowed: false}},
			{Name: "hour", Decision: core.Decision{Allowed: true}},
			{Name: "new-day", Shadow: true, Decision: core.Decision{Allowed: false}},
		},
	}
	fmt.Println(d.DeniedBy(false), d.DeniedBy(true))
	fmt.Println(core.Decision{Allowed: false}.DeniedBy(false) == nil) // one algorithm's
	// Output:
	// [second] [new-day]
	// true
}

// A split script's head defines what its body uses, once: a Redis store
// that runs scripts as functions loads the head with the library and
// sends only the body at each call. Its Lua is the two together.
func ExampleNewSplitScript() {
	head := `local function bump(key) local n = redis.call('INCR', key); redis.call('PEXPIRE', key, 60000); return n end`
	body := `return {bump(KEYS[1])}`
	count := core.NewSplitScript("count_split", head, body,
		func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
			var n int64
			if v, ok := tx.Get(keys[0]); ok {
				n = v[0]
			}
			n++
			tx.Put(keys[0], 1, time.Minute)[0] = n
			return append(reply, n), nil
		}, false)
	fmt.Println(count.Lua() == head+"\n"+body, count.Body() == body)

	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	for i := 0; i < 2; i++ {
		reply, err := store.RunScript(context.Background(), count, []string{"calls"}, nil, nil)
		fmt.Println(reply, err)
	}
	// Output:
	// true true
	// [1] <nil>
	// [2] <nil>
}
