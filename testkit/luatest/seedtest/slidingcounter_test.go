package seedtest_test

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

//go:embed testdata/seed_slidingcounter.lua
var seedSlidingCounter string

// TestSeedSlidingCounter runs the guide's sliding window counter, verbatim but for
// the time it reads, beside ours on a real redis-server. The guide's
// floating-point estimate may land on the other side of the limit than the
// exact one; seedtest.Compare accepts that only at a tie.
func TestSeedSlidingCounter(t *testing.T) {
	rdb := seedtest.Client(t)
	seed := redis.NewScript(seedtest.WithTime(seedSlidingCounter))
	run, ties := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		run++
		limit := rapid.Int64Range(1, 8).Draw(t, "limit")
		window := rapid.Int64Range(1, 5).Draw(t, "window_s")
		wus := window * 1e6
		start := rapid.Int64Range(1e11, 1e12).Draw(t, "start")
		clock := fakeclock.New(time.UnixMicro(start))
		lim, err := slidingcounter.New(seedtest.Store(t, rdb), slidingcounter.Config{Limit: limit, Window: time.Duration(window) * time.Second, Prefix: fmt.Sprintf("ours%d:", run), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		seedKey := fmt.Sprintf("{seed%d}", run)
		step := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, wus/4), rapid.Int64Range(0, 3*wus), rapid.Just(wus))
		ties += seedtest.Compare(t, start, step, false, seedtest.Ours(t, lim, "k", func(now int64) { clock.Set(time.UnixMicro(now)) }, seedtest.Step{
			Seed: func(now int64) bool {
				return seedtest.Int(t, rdb, seed, []string{seedKey}, append([]any{limit, window}, seedtest.TimeArgs(now)...)...) == 1
			},
			// The exact estimate is exactly the limit.
			Tie: func(now int64) bool {
				wn, e := now/wus, now%wus
				var prev, curr int64
				if st := seedtest.State(t, rdb, fmt.Sprintf("ours%d:{k}", run)); st != nil {
					switch st[0] {
					case wn:
						prev, curr = st[1], st[2]
					case wn - 1:
						prev = st[2]
					}
				}
				return prev*(wus-e)+curr*wus == limit*wus
			},
		}))
	})
	t.Logf("%d sequences, %d ended at a floating-point tie", run, ties)
}

// TestSeedSlidingCounterFloatTie replays, on a real redis-server, one tie the guide's
// floating point gets wrong. Limit 5, 1 s windows: 5 requests in window
// 99999, then 4 at 100000.7 s. At 100000.8 s the exact estimate is
// 5*(1-0.8) + 4 = 5 = limit: ratekit denies. The guide computes
// 4.99999999998 and allows. One microsecond later ratekit allows too.
func TestSeedSlidingCounterFloatTie(t *testing.T) {
	rdb := seedtest.Client(t)
	seed := redis.NewScript(seedtest.WithTime(seedSlidingCounter))
	// New reads the clock, and refuses the zero time: start at the first
	// request's.
	clock := fakeclock.New(time.UnixMicro(99_999_000_000))
	lim, err := slidingcounter.New(seedtest.Store(t, rdb), slidingcounter.Config{Limit: 5, Window: time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	both := func(now int64) (guide, ours bool) {
		guide = seedtest.Int(t, rdb, seed, []string{"{tie}"}, append([]any{5, 1}, seedtest.TimeArgs(now)...)...) == 1
		clock.Set(time.UnixMicro(now))
		d, err := lim.Allow(ctx, "tie")
		if err != nil {
			t.Fatal(err)
		}
		return guide, d.Allowed
	}
	for i := 0; i < 5; i++ {
		if g, o := both(99_999_000_000); !g || !o {
			t.Fatalf("request %d in window 99999: guide %v, ratekit %v", i, g, o)
		}
	}
	for i := 0; i < 4; i++ {
		if g, o := both(100_000_700_000); !g || !o {
			t.Fatalf("request %d at 100000.7 s: guide %v, ratekit %v", i, g, o)
		}
	}
	clock.Set(time.UnixMicro(100_000_800_001))
	if d, _ := lim.Peek(ctx, "tie"); !d.Allowed {
		t.Fatalf("ratekit denies 1µs after the tie: %+v", d)
	}
	g, o := both(100_000_800_000)
	if !g || o {
		t.Fatalf("at the tie: guide %v (want true: rounded below the limit), ratekit %v (want false: exactly the limit)", g, o)
	}
}
