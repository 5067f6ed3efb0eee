package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const s = time.Second

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := slidingcounter.Config{Limit: 10, Window: time.Minute}
	for _, c := range []struct {
		name, field string
		edit        func(*slidingcounter.Config)
	}{
		{"zero limit", "Limit", func(c *slidingcounter.Config) { c.Limit = 0 }},
		{"zero window", "Window", func(c *slidingcounter.Config) { c.Window = 0 }},
		{"sub-microsecond window", "Window", func(c *slidingcounter.Config) { c.Window = 999 }},
		{"limit x window too large", "Limit*Window", func(c *slidingcounter.Config) { c.Limit, c.Window = 1_000_000, 24*time.Hour }},
		{"prefix with brace", "Prefix", func(c *slidingcounter.Config) { c.Prefix = "}" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := slidingcounter.New(env.Store, cfg); return err })
	}
}

func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	l, err := slidingcounter.New(env.Store, slidingcounter.Config{Limit: 4, Window: 10 * s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 4)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		// Window 0 (aligned at T0).
		{Advance: 0, N: 4, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 0, ResetAfter: 20 * s, Window: 10 * s}},
		// Denied until the next window has begun: there prev = 4 weighs
		// 4*(W-e)/W, below the limit from e = 1µs on.
		{Advance: 1 * s, N: 1, Want: core.Decision{Allowed: false, Limit: 4, Remaining: 0, RetryAfter: 9*s + time.Microsecond, ResetAfter: 19 * s, Window: 10 * s}},
		// Window 1 at e = 5 s: estimate 4*0.5 = 2.
		{Advance: 14 * s, N: 0, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 2, ResetAfter: 5 * s, Window: 10 * s}},
		{Advance: 0, N: 2, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 0, ResetAfter: 15 * s, Window: 10 * s}},
		// Estimate 4*(W-e)/W + 2 < 4 - 1 + 1 needs e > 5 s: at 5 s + 1µs.
		{Advance: 0, N: 1, Want: core.Decision{Allowed: false, Limit: 4, Remaining: 0, RetryAfter: time.Microsecond, ResetAfter: 15 * s, Window: 10 * s}},
		// Cost 2 needs 4*(W-e)/W + 2 < 3: e > 7.5 s.
		{Advance: 0, N: 2, Want: core.Decision{Allowed: false, Limit: 4, Remaining: 0, RetryAfter: 2500*time.Millisecond + time.Microsecond, ResetAfter: 15 * s, Window: 10 * s}},
	})
}
