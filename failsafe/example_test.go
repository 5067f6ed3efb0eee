package failsafe_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/store/memory"
)

// unreachable stands for a Redis store whose server cannot be reached:
// every call fails with core.ErrStore, as a Redis adapter's does.
type unreachable struct{}

func (unreachable) RunScript(context.Context, *core.Script, []string, []int64, []int64) ([]int64, error) {
	return nil, fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connection refused", core.ErrStore)
}

// A Redis-backed limiter that falls back to a local one while Redis is
// unreachable. With go-redis, remote would be
// tokenbucket.New(goredisstore.New(rdb), cfg).
func ExampleNew() {
	cfg := tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute}
	remote, err := tokenbucket.New(unreachable{}, cfg)
	if err != nil {
		panic(err)
	}
	mem, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	local, err := tokenbucket.New(mem, cfg)
	if err != nil {
		panic(err)
	}

	lim, err := failsafe.New(failsafe.Config{
		Limiter: remote, Mode: failsafe.FailLocal, Local: local,
		Timeout: 50 * time.Millisecond, RetryInterval: time.Second,
		OnError: func(key string, err error) { fmt.Println("store failed for", key) },
	})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := lim.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, lim.Down())
	}
	// Output:
	// store failed for user:42
	// true true
	// true true
	// false true
}

// FailClosed denies while the store fails, with RetryAfter set to the
// RetryInterval, after which one call probes the store again; State says
// where it stands, for metrics. FailOpen would allow instead.
func Example_failClosed() {
	remote, err := tokenbucket.New(unreachable{}, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	lim, err := failsafe.New(failsafe.Config{
		Limiter: remote, Mode: failsafe.FailClosed, RetryInterval: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.State())
	d, err := lim.Allow(context.Background(), "user:42")
	fmt.Println(d.Allowed, d.RetryAfter, err, lim.State())
	// Output:
	// up
	// false 5s <nil> down
}
