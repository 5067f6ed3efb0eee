package seedtest_test

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// seedTokenBucket is the token bucket script of the Redis rate limiter guide,
// copied verbatim (../shared/seed/redis-rate-limiter-guide.md).
//
//go:embed testdata/seed_tokenbucket.lua
var seedTokenBucket string

var tokenBucketRun atomic.Int64

// TestSeedTokenBucket runs the guide's script and ours side by side on a real
// redis-server, at the same random times, and requires the same decision
// and the same remaining tokens every time.
//
// The one documented difference: when our bucket has refilled to full, it
// forgets its refill phase (a full bucket is a fresh one); the guide's keeps
// it. At exactly those moments the test checks that the guide's bucket is
// full too, and then deletes the guide's key, which the guide's own script
// then initialises to the same full, fresh bucket. Nothing else is aligned.
func TestSeedTokenBucket(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	seed := redis.NewScript(seedTokenBucket)
	ctx := context.Background()

	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.Int64Range(1, 10).Draw(t, "capacity")
		rate := rapid.Int64Range(1, capacity+1).Draw(t, "rate")
		interval := rapid.SampledFrom([]time.Duration{time.Second, 1500 * time.Millisecond, time.Minute}).Draw(t, "interval")
		ius := int64(interval / time.Microsecond)
		start := rapid.Int64Range(1.6e15, 2e15).Draw(t, "start")
		clock := fakeclock.New(time.UnixMicro(start))
		run := tokenBucketRun.Add(1)
		seedKey := fmt.Sprintf("seed:%d", run)
		lim, err := tokenbucket.New(seedtest.Store(t, rdb), tokenbucket.Config{
			Capacity: capacity, RefillRate: rate, RefillInterval: interval,
			Prefix: fmt.Sprintf("ours:%d:", run), Clock: clock,
		})
		if err != nil {
			t.Fatal(err)
		}
		step := rapid.OneOf(
			rapid.Just(int64(0)),
			rapid.Int64Range(0, ius),
			rapid.Int64Range(0, 4*ius),
			rapid.Map(rapid.Int64Range(1, 3), func(k int64) int64 { return k * ius }),
		)
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			now := clock.Advance(time.Duration(step.Draw(t, "advance")) * time.Microsecond).UnixMicro()

			peek, err := lim.Peek(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if peek.Remaining == capacity {
				st, err := rdb.HMGet(ctx, seedKey, "tokens", "last_refill").Result()
				if err != nil {
					t.Fatal(err)
				}
				if st[0] != nil {
					tokens, _ := strconv.ParseInt(st[0].(string), 10, 64)
					last, _ := strconv.ParseInt(st[1].(string), 10, 64)
					if refills := (now - last) / ius; refills > 0 {
						tokens = min(capacity, tokens+refills*rate)
					}
					if tokens != capacity {
						t.Fatalf("step %d: our bucket is full, the guide's holds %d of %d", i, tokens, capacity)
					}
					rdb.Del(ctx, seedKey)
				}
			}

			res, err := seed.Run(ctx, rdb, []string{seedKey}, capacity, rate, ius, now).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			d, err := lim.Allow(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != (res[0] == 1) || d.Remaining != res[1] {
				t.Fatalf("step %d at +%dµs: guide {allowed %d, tokens %d}, ours %+v", i, now-start, res[0], res[1], d)
			}
		}
	})
}
