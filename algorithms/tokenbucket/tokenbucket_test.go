package tokenbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const s = time.Second

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second}
	for _, c := range []struct {
		name, field string
		edit        func(*tokenbucket.Config)
	}{
		{"zero capacity", "Capacity", func(c *tokenbucket.Config) { c.Capacity = 0 }},
		{"negative capacity", "Capacity", func(c *tokenbucket.Config) { c.Capacity = -1 }},
		{"huge capacity", "Capacity", func(c *tokenbucket.Config) { c.Capacity = 1 << 62 }},
		{"zero rate", "RefillRate", func(c *tokenbucket.Config) { c.RefillRate = 0 }},
		{"negative rate", "RefillRate", func(c *tokenbucket.Config) { c.RefillRate = -5 }},
		{"zero interval", "RefillInterval", func(c *tokenbucket.Config) { c.RefillInterval = 0 }},
		{"negative interval", "RefillInterval", func(c *tokenbucket.Config) { c.RefillInterval = -s }},
		{"sub-microsecond interval", "RefillInterval", func(c *tokenbucket.Config) { c.RefillInterval = 1500 * time.Nanosecond }},
		{"full refill beyond 71 years", "RefillInterval", func(c *tokenbucket.Config) { c.Capacity = 1000; c.RefillInterval = 24 * 365 * time.Hour }},
		{"prefix with brace", "Prefix", func(c *tokenbucket.Config) { c.Prefix = "app{x}:" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := tokenbucket.New(env.Store, cfg); return err })
	}
	limitertest.BadConfig(t, "nil store", "store", func() error { _, err := tokenbucket.New(nil, ok); return err })
	// A refill rate above capacity is allowed: one refill fills the bucket.
	if _, err := tokenbucket.New(env.Store, tokenbucket.Config{Capacity: 2, RefillRate: 100, RefillInterval: s}); err != nil {
		t.Errorf("RefillRate > Capacity: %v", err)
	}
}

// A scripted walk through one bucket, with exact RetryAfter and ResetAfter.
func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	l, err := tokenbucket.New(env.Store, tokenbucket.Config{Capacity: 3, RefillRate: 2, RefillInterval: 10 * s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 3)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 0, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 3, Window: 20 * s}},
		// Full bucket of 3; take 2, last refill anchored now.
		{Advance: 0, N: 2, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 10 * s, Window: 20 * s}},
		// 4 s later: 1 token, 2 wanted: denied until the refill at 10 s.
		{Advance: 4 * s, N: 2, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 1, RetryAfter: 6 * s, ResetAfter: 6 * s, Window: 20 * s}},
		// Take the last token: 2 tokens come at 10 s, the third at 20 s.
		{Advance: 0, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 16 * s, Window: 20 * s}},
		// Peek sees the empty bucket, twice alike: it writes nothing.
		{Advance: 0, N: 0, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 6 * s, ResetAfter: 16 * s, Window: 20 * s}},
		{Advance: 0, N: 0, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 6 * s, ResetAfter: 16 * s, Window: 20 * s}},
		{Advance: 1 * s, N: 3, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 15 * s, ResetAfter: 15 * s, Window: 20 * s}},
		// At 10 s the refill adds 2.
		{Advance: 5 * s, N: 2, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 20 * s, Window: 20 * s}},
		// Idle 25 s: refills at 20 s and 30 s fill it; a full bucket is fresh,
		// so the next refill is a whole interval after this request.
		{Advance: 25 * s, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s, Window: 20 * s}},
	})
}

func TestReset(t *testing.T) {
	env := limitertest.New(t)
	l, err := tokenbucket.New(env.Store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env.Walk(t, l, []limitertest.Step{
		{N: 2, Want: core.Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: 2 * time.Hour, Window: 2 * time.Hour}},
		{N: 1, Want: core.Decision{Allowed: false, Limit: 2, Remaining: 0, RetryAfter: time.Hour, ResetAfter: 2 * time.Hour, Window: 2 * time.Hour}},
	})
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	env.Walk(t, l, []limitertest.Step{
		{N: 1, Want: core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: time.Hour, Window: 2 * time.Hour}},
	})
	// Reset of an absent key is not an error.
	if err := l.Reset(ctx, "never-seen"); err != nil {
		t.Fatal(err)
	}
}

// Keys are separate per key and per prefix.
func TestKeysAndPrefixesAreSeparate(t *testing.T) {
	env := limitertest.New(t)
	cfg := tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour, Clock: env.Clock}
	a, err := tokenbucket.New(env.Store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "tenant2:"
	b, err := tokenbucket.New(env.Store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"x", "{x}", "%7Bx%7D", "x}", "y"} {
		if d, err := a.Allow(ctx, k); err != nil || !d.Allowed {
			t.Fatalf("a.Allow(%q) = %+v, %v: keys share state", k, d, err)
		}
		if d, err := b.Allow(ctx, k); err != nil || !d.Allowed {
			t.Fatalf("b.Allow(%q) = %+v, %v: prefixes share state", k, d, err)
		}
	}
}

// Without a Clock the limiter uses the store's clock.
func TestStoreTime(t *testing.T) {
	env := limitertest.New(t)
	l, err := tokenbucket.New(env.Store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 1, Want: core.Decision{Allowed: true, Limit: 1, Remaining: 0, ResetAfter: time.Minute, Window: time.Minute}},
		{Advance: 59 * s, N: 1, Want: core.Decision{Allowed: false, Limit: 1, Remaining: 0, RetryAfter: s, ResetAfter: s, Window: time.Minute}},
		{Advance: s, N: 1, Want: core.Decision{Allowed: true, Limit: 1, Remaining: 0, ResetAfter: time.Minute, Window: time.Minute}},
	})
}

// The state's TTL is the time to a full bucket; expiry changes no decision.
func TestExpiredStateDecidesLikeStale(t *testing.T) {
	env := limitertest.New(t)
	l, err := tokenbucket.New(env.Store, tokenbucket.Config{Capacity: 4, RefillRate: 1, RefillInterval: time.Second, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AllowN(context.Background(), "k", 3); err != nil {
		t.Fatal(err)
	}
	// With a client clock the TTL is 3 s plus a minute of slack.
	env.Clock.Advance(3*time.Second + time.Minute - time.Millisecond)
	env.Store.Sweep()
	if env.Store.Len() != 1 {
		t.Fatalf("state expired before its TTL")
	}
	env.Clock.Advance(time.Millisecond)
	if env.Store.Sweep(); env.Store.Len() != 0 {
		t.Fatalf("state outlived its TTL")
	}
}
