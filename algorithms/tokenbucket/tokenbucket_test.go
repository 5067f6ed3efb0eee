package tokenbucket_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newStore(t *testing.T, opts ...memory.Option) *memory.Store {
	t.Helper()
	s, err := memory.New(append([]memory.Option{memory.WithSweepInterval(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newLimiter(t *testing.T, cfg tokenbucket.Config) (*tokenbucket.Limiter, *fakeclock.Clock, *memory.Store) {
	t.Helper()
	clock := fakeclock.New(t0)
	cfg.Clock = clock
	s := newStore(t, memory.WithClock(clock))
	l, err := tokenbucket.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, clock, s
}

func TestNewRejectsBadConfig(t *testing.T) {
	s := newStore(t)
	ok := tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second}
	tests := []struct {
		name  string
		edit  func(*tokenbucket.Config)
		field string
	}{
		{"zero capacity", func(c *tokenbucket.Config) { c.Capacity = 0 }, "Capacity"},
		{"negative capacity", func(c *tokenbucket.Config) { c.Capacity = -1 }, "Capacity"},
		{"huge capacity", func(c *tokenbucket.Config) { c.Capacity = 1 << 62 }, "Capacity"},
		{"zero rate", func(c *tokenbucket.Config) { c.RefillRate = 0 }, "RefillRate"},
		{"negative rate", func(c *tokenbucket.Config) { c.RefillRate = -5 }, "RefillRate"},
		{"zero interval", func(c *tokenbucket.Config) { c.RefillInterval = 0 }, "RefillInterval"},
		{"negative interval", func(c *tokenbucket.Config) { c.RefillInterval = -time.Second }, "RefillInterval"},
		{"sub-microsecond interval", func(c *tokenbucket.Config) { c.RefillInterval = 1500 * time.Nanosecond }, "RefillInterval"},
		{"full refill beyond 71 years", func(c *tokenbucket.Config) { c.Capacity = 1000; c.RefillInterval = 24 * 365 * time.Hour }, "RefillInterval"},
		{"prefix with brace", func(c *tokenbucket.Config) { c.Prefix = "app{x}:" }, "Prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			l, err := tokenbucket.New(s, cfg)
			if !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("New(%+v) = %v, %v; want ErrInvalidConfig", cfg, l, err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %s", err, tt.field)
			}
		})
	}
	if _, err := tokenbucket.New(nil, ok); !errors.Is(err, core.ErrInvalidConfig) {
		t.Fatalf("New(nil runner) = %v; want ErrInvalidConfig", err)
	}
	// A refill rate above capacity is allowed: one refill fills the bucket.
	if _, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 2, RefillRate: 100, RefillInterval: time.Second}); err != nil {
		t.Fatalf("RefillRate > Capacity: %v", err)
	}
}

func TestBadCallsAreErrors(t *testing.T) {
	l, clock, _ := newLimiter(t, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second})
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"empty key", func() error { _, err := l.Allow(ctx, ""); return err }, core.ErrInvalidKey},
		{"huge key", func() error { _, err := l.Allow(ctx, strings.Repeat("k", core.MaxKeyLen+1)); return err }, core.ErrInvalidKey},
		{"empty key peek", func() error { _, err := l.Peek(ctx, ""); return err }, core.ErrInvalidKey},
		{"empty key reset", func() error { return l.Reset(ctx, "") }, core.ErrInvalidKey},
		{"zero cost", func() error { _, err := l.AllowN(ctx, "k", 0); return err }, core.ErrInvalidCost},
		{"negative cost", func() error { _, err := l.AllowN(ctx, "k", -1); return err }, core.ErrInvalidCost},
		{"cost above capacity", func() error { _, err := l.AllowN(ctx, "k", 6); return err }, core.ErrInvalidCost},
		{"max int64 cost", func() error { _, err := l.AllowN(ctx, "k", 1<<63-1); return err }, core.ErrInvalidCost},
		{"clock before 1970", func() error {
			clock.Set(time.Unix(-1, 0))
			defer clock.Set(t0)
			_, err := l.Allow(ctx, "k")
			return err
		}, core.ErrInvalidTime},
		{"clock after 2112", func() error {
			clock.Set(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
			defer clock.Set(t0)
			_, err := l.Allow(ctx, "k")
			return err
		}, core.ErrInvalidTime},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	// None of the bad calls consumed anything.
	d, err := l.Peek(ctx, "k")
	if err != nil || d.Remaining != 5 {
		t.Fatalf("after bad calls: %+v, %v; want a full bucket", d, err)
	}
}

// A scripted walk through one bucket, with exact RetryAfter and ResetAfter.
func TestDecisions(t *testing.T) {
	l, clock, _ := newLimiter(t, tokenbucket.Config{Capacity: 3, RefillRate: 2, RefillInterval: 10 * time.Second})
	ctx := context.Background()
	step := func(advance time.Duration, n int64, want core.Decision) {
		t.Helper()
		clock.Advance(advance)
		got, err := l.AllowN(ctx, "k", n)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("after %v, AllowN(%d) = %+v, want %+v", clock.Now().Sub(t0), n, got, want)
		}
	}
	s := time.Second
	// Full bucket of 3; take 2, last refill anchored now.
	step(0, 2, core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 10 * s})
	// 4 s later: 1 token, 2 wanted: denied until the refill at 10 s.
	step(4*s, 2, core.Decision{Allowed: false, Limit: 3, Remaining: 1, RetryAfter: 6 * s, ResetAfter: 6 * s})
	// Take the last token: 2 tokens come at 10 s, the third at 20 s.
	step(0, 1, core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 16 * s})
	step(1*s, 3, core.Decision{Allowed: false, Limit: 3, Remaining: 0, RetryAfter: 15 * s, ResetAfter: 15 * s})
	// At 10 s the refill adds 2.
	step(5*s, 2, core.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 20 * s})
	// Idle 25 s: refills at 20 s and 30 s fill it; a full bucket is fresh,
	// so the next refill is a whole interval after this request.
	step(25*s, 1, core.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 10 * s})
}

func TestPeekNeverWrites(t *testing.T) {
	l, clock, s := newLimiter(t, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second})
	ctx := context.Background()
	d, err := l.Peek(ctx, "new")
	if err != nil || !d.Allowed || d.Remaining != 2 || d.ResetAfter != 0 {
		t.Fatalf("Peek on a new key = %+v, %v", d, err)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("Peek on a new key stored %d keys", n)
	}
	if _, err := l.AllowN(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Millisecond)
	for i := 0; i < 3; i++ {
		d, err := l.Peek(ctx, "k")
		want := core.Decision{Allowed: false, Limit: 2, Remaining: 0, RetryAfter: 700 * time.Millisecond, ResetAfter: 1700 * time.Millisecond}
		if err != nil || d != want {
			t.Fatalf("Peek #%d = %+v, %v; want %+v", i, d, err, want)
		}
	}
}

func TestReset(t *testing.T) {
	l, _, _ := newLimiter(t, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if d, _ := l.Allow(ctx, "k"); !d.Allowed {
			t.Fatalf("request %d denied", i)
		}
	}
	if d, _ := l.Allow(ctx, "k"); d.Allowed {
		t.Fatal("third request allowed from a bucket of 2")
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Allow(ctx, "k"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after Reset: %+v", d)
	}
	// Reset of an absent key is not an error.
	if err := l.Reset(ctx, "never-seen"); err != nil {
		t.Fatal(err)
	}
}

// Keys are separate per key and per prefix.
func TestKeysAndPrefixesAreSeparate(t *testing.T) {
	s := newStore(t)
	clock := fakeclock.New(t0)
	cfg := tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour, Clock: clock}
	a, _ := tokenbucket.New(s, cfg)
	cfg.Prefix = "tenant2:"
	b, _ := tokenbucket.New(s, cfg)
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
	clock := fakeclock.New(t0)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("first request denied")
	}
	clock.Advance(59 * time.Second)
	if d, _ := l.Allow(ctx, "k"); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("at 59s: %+v", d)
	}
	clock.Advance(time.Second)
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Fatalf("at 60s: %+v", d)
	}
}

// The state's TTL is the time to a full bucket; expiry changes no decision.
func TestExpiredStateDecidesLikeStale(t *testing.T) {
	l, clock, s := newLimiter(t, tokenbucket.Config{Capacity: 4, RefillRate: 1, RefillInterval: time.Second})
	ctx := context.Background()
	if _, err := l.AllowN(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	// With a client clock the TTL is 3 s plus a minute of slack.
	clock.Advance(3*time.Second + time.Minute - time.Millisecond)
	s.Sweep()
	if s.Len() != 1 {
		t.Fatalf("state expired before its TTL")
	}
	clock.Advance(time.Millisecond)
	if s.Sweep(); s.Len() != 0 {
		t.Fatalf("state outlived its TTL")
	}
}
