package seedtest_test

import (
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

//go:embed testdata/seed_leakybucket.lua
var seedLeakyBucket string

// TestSeedLeakyBucket runs the guide's leaky bucket, verbatim but for the time
// it reads, beside ours (Per = one second) on a real redis-server. The
// guide's floating-point level may land on the other side of the capacity
// than the exact one; seedtest.Compare accepts that only at a tie.
func TestSeedLeakyBucket(t *testing.T) {
	rdb := seedtest.Client(t)
	seed := redis.NewScript(seedtest.WithTime(seedLeakyBucket))
	run, ties := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		run++
		capacity := rapid.Int64Range(1, 8).Draw(t, "capacity")
		rate := rapid.Int64Range(1, 5).Draw(t, "rate")
		start := rapid.Int64Range(1e11, 1e12).Draw(t, "start")
		clock := fakeclock.New(time.UnixMicro(start))
		lim, err := leakybucket.New(seedtest.Store(t, rdb), leakybucket.Config{Capacity: capacity, LeakRate: rate, Per: time.Second, Prefix: fmt.Sprintf("ours%d:", run), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		seedKey := fmt.Sprintf("seed%d", run)
		unit := int64(1e6) / rate // the time one unit takes to leak, about
		step := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, unit), rapid.Int64Range(0, 3*capacity*unit), rapid.Just(unit))
		ties += seedtest.Compare(t, start, step, false, seedtest.Ours(t, lim, "k", func(now int64) { clock.Set(time.UnixMicro(now)) }, seedtest.Step{
			Seed: func(now int64) bool {
				return seedtest.Int(t, rdb, seed, []string{seedKey}, append([]any{capacity, rate}, seedtest.TimeArgs(now)...)...) == 1
			},
			// The exact level, drained to now, plus one unit is exactly
			// the capacity.
			Tie: func(now int64) bool {
				const per = int64(1e6)
				var level int64
				if st := seedtest.State(t, rdb, fmt.Sprintf("ours%d:{k}", run)); st != nil {
					level = st[0]
					if el := now - st[1]; el > 0 {
						level = max(level-el*rate, 0)
					}
				}
				return level+per == capacity*per
			},
		}))
	})
	t.Logf("%d sequences, %d ended at a floating-point tie", run, ties)
}
