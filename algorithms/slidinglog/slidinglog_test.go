package slidinglog_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const s = time.Second

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := slidinglog.Config{Limit: 10, Window: time.Minute}
	for _, c := range []struct {
		name, field string
		edit        func(*slidinglog.Config)
	}{
		{"zero limit", "Limit", func(c *slidinglog.Config) { c.Limit = 0 }},
		{"negative limit", "Limit", func(c *slidinglog.Config) { c.Limit = -1 }},
		{"limit above MaxLimit", "MaxLimit", func(c *slidinglog.Config) { c.Limit = slidinglog.MaxLimit + 1 }},
		{"zero window", "Window", func(c *slidinglog.Config) { c.Window = 0 }},
		{"sub-microsecond window", "Window", func(c *slidinglog.Config) { c.Window = s + 1 }},
		{"prefix with brace", "Prefix", func(c *slidinglog.Config) { c.Prefix = "a}" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := slidinglog.New(env.Store, cfg); return err })
	}
	if _, err := slidinglog.New(env.Store, slidinglog.Config{Limit: slidinglog.MaxLimit, Window: s}); err != nil {
		t.Errorf("Limit = MaxLimit: %v", err)
	}
}

func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	l, err := slidinglog.New(env.Store, slidinglog.Config{Limit: 3, Window: 10 * s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 3)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s, Window: 10 * s}},
		{Advance: 2 * s, N: 2, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 10 * s, Window: 10 * s}},
		// At 5 s: the entry from 0 s leaves at 10 s.
		{Advance: 3 * s, N: 1, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 5 * s, ResetAfter: 7 * s, Window: 10 * s}},
		// Cost 3 needs all three entries gone: the last two leave at 12 s.
		{Advance: 0, N: 3, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 7 * s, ResetAfter: 7 * s, Window: 10 * s}},
		// At exactly 10 s the first entry has left.
		{Advance: 5 * s, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 10 * s, Window: 10 * s}},
		{Advance: 0, N: 0, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 2 * s, ResetAfter: 10 * s, Window: 10 * s}},
	})
}
