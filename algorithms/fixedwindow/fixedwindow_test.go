package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

const s = time.Second

func TestNewRejectsBadConfig(t *testing.T) {
	env := limitertest.New(t)
	ok := fixedwindow.Config{Limit: 10, Window: time.Minute}
	for _, c := range []struct {
		name, field string
		edit        func(*fixedwindow.Config)
	}{
		{"zero limit", "Limit", func(c *fixedwindow.Config) { c.Limit = 0 }},
		{"negative limit", "Limit", func(c *fixedwindow.Config) { c.Limit = -1 }},
		{"huge limit", "Limit", func(c *fixedwindow.Config) { c.Limit = 1 << 60 }},
		{"zero window", "Window", func(c *fixedwindow.Config) { c.Window = 0 }},
		{"negative window", "Window", func(c *fixedwindow.Config) { c.Window = -s }},
		{"sub-microsecond window", "Window", func(c *fixedwindow.Config) { c.Window = 10 * time.Nanosecond }},
		{"window over 71 years", "Window", func(c *fixedwindow.Config) { c.Window = 1 << 62 }},
		{"prefix with brace", "Prefix", func(c *fixedwindow.Config) { c.Prefix = "{" }},
	} {
		cfg := ok
		c.edit(&cfg)
		limitertest.BadConfig(t, c.name, c.field, func() error { _, err := fixedwindow.New(env.Store, cfg); return err })
	}
	limitertest.BadConfig(t, "nil store", "store", func() error { _, err := fixedwindow.New(nil, ok); return err })
}

func TestDecisions(t *testing.T) {
	env := limitertest.New(t)
	l, err := fixedwindow.New(env.Store, fixedwindow.Config{Limit: 3, Window: 10 * s, Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	limitertest.BadCalls(t, l, 3)
	env.BadClock(t, l)
	env.PeekNeverWrites(t, l)
	env.Walk(t, l, []limitertest.Step{
		{Advance: 0, N: 0, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 3, Window: 10 * s}},
		// The window opens at the first request.
		{Advance: 0, N: 2, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 10 * s, Window: 10 * s}},
		{Advance: 4 * s, N: 2, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 1, RetryAfter: 6 * s, ResetAfter: 6 * s, Window: 10 * s}},
		{Advance: 0, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 6 * s, Window: 10 * s}},
		{Advance: 6*s - time.Microsecond, N: 1, Want: core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond, Window: 10 * s}},
		// Exactly Window after it opened, a new window opens.
		{Advance: time.Microsecond, N: 1, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s, Window: 10 * s}},
		{Advance: 0, N: 0, Want: core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s, Window: 10 * s}},
	})
}
