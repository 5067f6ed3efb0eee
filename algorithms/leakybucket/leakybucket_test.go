package leakybucket_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const ms = time.Millisecond

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := leakybucket.Config{Capacity: 10, LeakRate: 1, Per: time.Second}
	for _, c := range []struct {
		name, field string
		edit        func(*leakybucket.Config)
	}{
		{"zero capacity", "Capacity", func(c *leakybucket.Config) { c.Capacity = 0 }},
		{"negative rate", "LeakRate", func(c *leakybucket.Config) { c.LeakRate = -1 }},
		{"zero per", "Per", func(c *leakybucket.Config) { c.Per = 0 }},
		{"sub-microsecond per", "Per", func(c *leakybucket.Config) { c.Per = time.Nanosecond }},
		{"capacity x per too large", "Capacity*Per", func(c *leakybucket.Config) { c.Capacity, c.Per = 1<<40, time.Hour }},
		{"prefix with brace", "Prefix", func(c *leakybucket.Config) { c.Prefix = "{}" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := leakybucket.New(env.Store, cfg); return err })
	}
}

func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	// Capacity 4, draining 2 a second: one unit every 500 ms.
	l, err := leakybucket.New(env.Store, leakybucket.Config{Capacity: 4, LeakRate: 2, Per: time.Second, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 4)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 3, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 1, ResetAfter: 1500 * ms, Window: 2 * time.Second}},
		// Level 2.5: 2 more would overflow by 0.5, which drains in 250 ms.
		{Advance: 250 * ms, N: 2, Want: core.Decision{Allowed: false, Limit: 4, Remaining: 1, RetryAfter: 250 * ms, ResetAfter: 1250 * ms, Window: 2 * time.Second}},
		{Advance: 250 * ms, N: 2, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 0, ResetAfter: 2000 * ms, Window: 2 * time.Second}},
		{Advance: 0, N: 0, Want: core.Decision{Allowed: false, Limit: 4, Remaining: 0, RetryAfter: 500 * ms, ResetAfter: 2000 * ms, Window: 2 * time.Second}},
		// Empty again after 2 s.
		{Advance: 2000 * ms, N: 0, Want: core.Decision{Allowed: true, Limit: 4, Remaining: 4, Window: 2 * time.Second}},
	})
}

// With the clock behind the last leak, Refund returns what Peek reports
// after it: the wait until the clock catches up while the bucket holds
// something, and no wait once the refund has emptied it (an empty bucket
// is already in its initial state).
func TestRefundWithClockBehind(t *testing.T) {
	env := limitertest.New(t)
	// Capacity 4, draining 2 a second: one unit every 500 ms.
	l, err := leakybucket.New(env.Store, leakybucket.Config{Capacity: 4, LeakRate: 2, Per: time.Second, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.AllowN(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(-300 * ms)
	for _, c := range []struct {
		n    int64
		want core.Decision
	}{
		// Level 1 as at the last leak, 300 ms ahead: 300 + 500 ms.
		{1, core.Decision{Allowed: true, Limit: 4, Remaining: 3, ResetAfter: 800 * ms, Window: 2 * time.Second}},
		// Empty: nothing to wait for.
		{1, core.Decision{Allowed: true, Limit: 4, Remaining: 4, Window: 2 * time.Second}},
		{1, core.Decision{Allowed: true, Limit: 4, Remaining: 4, Window: 2 * time.Second}},
	} {
		got, err := l.Refund(ctx, "k", c.n)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("Refund(k, %d) = %+v, %v, want %+v", c.n, got, err, c.want)
		}
		if after, err := l.Peek(ctx, "k"); err != nil || !reflect.DeepEqual(after, got) {
			t.Fatalf("Peek after Refund(k, %d) = %+v, %v, want what the refund returned, %+v", c.n, after, err, got)
		}
	}
}
