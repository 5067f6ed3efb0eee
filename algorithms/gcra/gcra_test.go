package gcra_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const ms = time.Millisecond

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := gcra.Config{Rate: 10, Period: time.Second, Burst: 5}
	for _, c := range []struct {
		name, field string
		edit        func(*gcra.Config)
	}{
		{"zero rate", "Rate", func(c *gcra.Config) { c.Rate = 0 }},
		{"zero burst", "Burst", func(c *gcra.Config) { c.Burst = 0 }},
		{"negative burst", "Burst", func(c *gcra.Config) { c.Burst = -2 }},
		{"zero period", "Period", func(c *gcra.Config) { c.Period = 0 }},
		{"sub-microsecond period", "Period", func(c *gcra.Config) { c.Period = time.Second + 1 }},
		{"burst x period too large", "Burst*Period", func(c *gcra.Config) { c.Burst, c.Period = 1<<30, 24*time.Hour }},
		{"prefix with brace", "Prefix", func(c *gcra.Config) { c.Prefix = "x{" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := gcra.New(env.Store, cfg); return err })
	}
}

func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	// 2 per second (one every 500 ms), bursts of 3.
	l, err := gcra.New(env.Store, gcra.Config{Rate: 2, Period: time.Second, Burst: 3, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 3)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 0, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 3, Window: 1500 * ms}},
		{Advance: 0, N: 3, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1500 * ms, Window: 1500 * ms}},
		{Advance: 200 * ms, N: 1, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 300 * ms, ResetAfter: 1300 * ms, Window: 1500 * ms}},
		{Advance: 300 * ms, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1500 * ms, Window: 1500 * ms}},
		{Advance: 1500 * ms, N: 0, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 3, Window: 1500 * ms}},
	})
}

// 3 per second is an emission interval of 333333.33µs: kept exactly.
func TestFractionalEmissionInterval(t *testing.T) {
	env := limitertest.New(t)
	l, err := gcra.New(env.Store, gcra.Config{Rate: 3, Period: time.Second, Burst: 1, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 1, Want: core.Decision{Allowed: true, Limit: 1, Remaining: 0, ResetAfter: 333334 * time.Microsecond, Window: 333334 * time.Microsecond}},
		{Advance: 333333 * time.Microsecond, N: 1, Want: core.Decision{Allowed: false, Limit: 1, Remaining: 0, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond, Window: 333334 * time.Microsecond}},
		{Advance: time.Microsecond, N: 1, Want: core.Decision{Allowed: true, Limit: 1, Remaining: 0, ResetAfter: 333334 * time.Microsecond, Window: 333334 * time.Microsecond}},
	})
	// Over a long run exactly 3 per second pass.
	ctx := context.Background()
	allowed := 0
	for i := 0; i < 3000; i++ {
		env.Clock.Advance(time.Millisecond)
		if d, _ := l.Allow(ctx, "long"); d.Allowed {
			allowed++
		}
	}
	if allowed != 9 && allowed != 10 {
		t.Fatalf("%d allowed in 3 s at 3/s with burst 1", allowed)
	}
}

func TestAllowAtMost(t *testing.T) {
	env := limitertest.New(t)
	l, err := gcra.New(env.Store, gcra.Config{Rate: 2, Period: time.Second, Burst: 3, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(n, wantGranted int64, want core.Decision) {
		t.Helper()
		g, d, err := l.AllowAtMost(ctx, "k", n)
		if err != nil || g != wantGranted || !reflect.DeepEqual(d, want) {
			t.Fatalf("AllowAtMost(%d) = %d, %+v, %v; want %d, %+v", n, g, d, err, wantGranted, want)
		}
	}
	check(5, 3, core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1500 * ms, Window: 1500 * ms})
	env.Clock.Advance(500 * ms)
	check(5, 1, core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 1500 * ms, Window: 1500 * ms})
	check(2, 0, core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 500 * ms, ResetAfter: 1500 * ms, Window: 1500 * ms})
	for _, n := range []int64{0, -1} {
		if _, _, err := l.AllowAtMost(ctx, "k", n); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("AllowAtMost(%d): %v", n, err)
		}
	}
	if _, _, err := l.AllowAtMost(ctx, "", 1); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("AllowAtMost with empty key: %v", err)
	}
}
