package seedtest_test

import (
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

//go:embed testdata/seed_slidinglog.lua
var seedSlidingLog string

// TestSeedSlidingLog runs the guide's sliding window log, verbatim but for the
// time it reads, beside ours on a real redis-server.
func TestSeedSlidingLog(t *testing.T) {
	rdb := seedtest.Client(t)
	seed := redis.NewScript(seedtest.WithTime(seedSlidingLog))
	run, ties := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		run++
		limit := rapid.Int64Range(1, 8).Draw(t, "limit")
		window := rapid.Int64Range(1, 5).Draw(t, "window_s")
		wus := window * 1e6
		start := rapid.Int64Range(1e11, 1e12).Draw(t, "start")
		clock := fakeclock.New(time.UnixMicro(start))
		lim, err := slidinglog.New(seedtest.Store(t, rdb), slidinglog.Config{Limit: limit, Window: time.Duration(window) * time.Second, Prefix: fmt.Sprintf("ours%d:", run), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		seedKey, member := fmt.Sprintf("seed%d", run), 0
		step := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, wus/2), rapid.Int64Range(0, 3*wus), rapid.Just(wus))
		ties += seedtest.Compare(t, start, step, true, seedtest.Ours(t, lim, "k", func(now int64) { clock.Set(time.UnixMicro(now)) }, seedtest.Step{
			Seed: func(now int64) bool {
				member++
				args := append([]any{limit, window, fmt.Sprintf("m%d", member)}, seedtest.TimeArgs(now)...)
				return seedtest.Int(t, rdb, seed, []string{seedKey}, args...) == 1
			},
		}))
	})
	t.Logf("%d sequences, %d ended at a floating-point tie", run, ties)
}
