package seedtest_test

import (
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/luatest/seedtest"
)

//go:embed testdata/seed_fixedwindow.lua
var seedFixedWindow string

// TestSeedFixedWindow runs the guide's fixed window, verbatim, beside ours. The
// guide reads no clock: its window is the key's TTL. So both run on
// miniredis, whose TTLs and TIME follow SetTime (ClockTTL), and ours reads
// the server's TIME. No floating point is involved: every decision must
// match.
func TestSeedFixedWindow(t *testing.T) {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	seed := redis.NewScript(seedFixedWindow)
	run := 0
	rapid.Check(t, func(t *rapid.T) {
		run++
		limit := rapid.Int64Range(1, 8).Draw(t, "limit")
		window := rapid.Int64Range(1, 5).Draw(t, "window_s")
		wus := window * 1e6
		start := rapid.Int64Range(1.6e15, 2e15).Draw(t, "start")
		m.SetTime(time.UnixMicro(start))
		lim, err := fixedwindow.New(seedtest.Store(t, rdb, scriptproto.WithoutReadOnlyCommands()), fixedwindow.Config{Limit: limit, Window: time.Duration(window) * time.Second, Prefix: fmt.Sprintf("ours%d:", run)})
		if err != nil {
			t.Fatal(err)
		}
		seedKey := fmt.Sprintf("seed%d", run)
		step := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, wus/3), rapid.Int64Range(0, 3*wus), rapid.Just(wus), rapid.Just(wus-1))
		seedtest.Compare(t, start, step, true, seedtest.Ours(t, lim, "k", func(now int64) { m.SetTime(time.UnixMicro(now)) }, seedtest.Step{
			Seed: func(now int64) bool {
				m.SetTime(time.UnixMicro(now))
				return seedtest.Int(t, rdb, seed, []string{seedKey}, limit, window) == 1
			},
		}))
	})
}
