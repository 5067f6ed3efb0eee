package failsafe_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/failsafe"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/memory"
)

// A Redis-backed limiter that falls back to a local one while Redis is
// unreachable (here: nothing listens on port 1).
func ExampleNew() {
	cfg := tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	remote, _ := tokenbucket.New(goredisstore.New(rdb), cfg)
	mem, _ := memory.New()
	defer mem.Close()
	local, _ := tokenbucket.New(mem, cfg)

	lim, err := failsafe.New(failsafe.Config{
		Store: remote, Policy: failsafe.FailLocal, Local: local,
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
