package denycache_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

type counting struct {
	core.Limiter
	calls atomic.Int64
}

func (c *counting) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op == core.OpAllow {
		c.calls.Add(1)
	}
	return c.Limiter.Decide(ctx, r)
}

// newCache returns denycache.New(next, opts...), or fails t.
func newCache(t *testing.T, next core.Limiter, opts ...denycache.Option) *denycache.Limiter {
	t.Helper()
	l, err := denycache.New(next, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestDenialsAreServedLocallyUntilRetryAfter(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: 10 * time.Second, Clock: clock})
	next := &counting{Limiter: tb}
	l := newCache(t, next, denycache.WithClock(clock))
	ctx := context.Background()

	if d, _ := l.AllowN(ctx, "k", 3); !d.Allowed {
		t.Fatal("first request denied")
	}
	d, _ := l.AllowN(ctx, "k", 2) // denied by the store: 20 s to wait
	if d.Allowed || d.RetryAfter != 20*time.Second || next.calls.Load() != 2 {
		t.Fatalf("%+v after %d calls", d, next.calls.Load())
	}
	clock.Advance(5 * time.Second)
	// The same cost: local, the wait counted down.
	if d, _ = l.AllowN(ctx, "k", 2); d.Allowed || d.RetryAfter != 15*time.Second || next.calls.Load() != 2 {
		t.Fatalf("the same cost: %+v after %d store calls", d, next.calls.Load())
	}
	// A higher cost is denied too, but waits longer than the cached
	// denial says: the store answers it (30 s for three tokens).
	if d, _ = l.AllowN(ctx, "k", 3); d.Allowed || d.RetryAfter != 25*time.Second || next.calls.Load() != 3 {
		t.Fatalf("a higher cost: %+v after %d store calls", d, next.calls.Load())
	}
	if d, _ = l.AllowN(ctx, "k", 2); d.Allowed || d.RetryAfter != 15*time.Second || next.calls.Load() != 3 {
		t.Fatalf("the lower cost's denial stays: %+v after %d store calls", d, next.calls.Load())
	}
	// A lower cost may pass: it goes to the store (and is denied: 1 token
	// comes at 10 s), and its denial is cached in turn.
	if d, _ = l.AllowN(ctx, "k", 1); d.Allowed || d.RetryAfter != 5*time.Second || next.calls.Load() != 4 {
		t.Fatalf("lower cost: %+v after %d store calls", d, next.calls.Load())
	}
	if d, _ = l.AllowN(ctx, "k", 1); d.Allowed || d.RetryAfter != 5*time.Second || next.calls.Load() != 4 {
		t.Fatalf("lower cost, cached: %+v after %d store calls", d, next.calls.Load())
	}
	// When RetryAfter ends, the store decides again, exactly as without
	// the cache.
	clock.Advance(5 * time.Second)
	if d, _ = l.AllowN(ctx, "k", 1); !d.Allowed || next.calls.Load() != 5 {
		t.Fatalf("after the wait: %+v after %d store calls", d, next.calls.Load())
	}
	// Reset through the cache clears both.
	l.AllowN(ctx, "k", 3)
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, _ = l.AllowN(ctx, "k", 3); !d.Allowed {
		t.Fatalf("after Reset: %+v", d)
	}
}

// The one thing the cache cannot see: a Reset made elsewhere.
func TestResetElsewhereIsInvisible(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute, Clock: clock})
	l := newCache(t, tb, denycache.WithClock(clock))
	ctx := context.Background()
	l.Allow(ctx, "k")
	l.Allow(ctx, "k")  // denied, cached
	tb.Reset(ctx, "k") // another process resets the key
	if d, _ := l.Allow(ctx, "k"); d.Allowed {
		t.Fatal("the cache saw a Reset made elsewhere?")
	}
	l.Forget("k")
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("Forget did not clear the denial")
	}
}

func TestMaxKeys(t *testing.T) {
	for _, limit := range []int{-1, 0, 1, 10, 64, 100} {
		s, _ := memory.New()
		defer s.Close()
		tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour})
		next := &counting{Limiter: tb}
		l := newCache(t, next, denycache.WithMaxKeys(limit))
		ctx := context.Background()
		for i := range 1000 {
			k := strconv.Itoa(i)
			l.Allow(ctx, k) // allowed
			l.Allow(ctx, k) // denied by the store, cached while there is room
			l.Allow(ctx, k)
		}
		// Exactly max keys' third calls were answered here.
		if want := 3000 - int64(max(limit, 0)); next.calls.Load() != want || l.Hits() != uint64(max(limit, 0)) {
			t.Errorf("WithMaxKeys(%d): %d store calls, %d hits; want %d calls", limit, next.calls.Load(), l.Hits(), want)
		}
		// Room comes back as keys are forgotten.
		if limit > 0 {
			l.Forget("0")
			l.Allow(ctx, "new")
			l.Allow(ctx, "new")
			hits := l.Hits()
			if l.Allow(ctx, "new"); l.Hits() != hits+1 {
				t.Errorf("WithMaxKeys(%d): no room after Forget", limit)
			}
		}
	}
}

// A cached denial is given only to a call the limiter would not refuse.
func TestCachedDenialKeepsTheLimitersErrors(t *testing.T) {
	s, _ := memory.New()
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	l := newCache(t, tb)
	ctx := context.Background()
	l.AllowN(ctx, "k", 2)
	if d, err := l.AllowN(ctx, "k", 2); err != nil || d.Allowed {
		t.Fatalf("denial: %+v, %v", d, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.AllowN(ctx, "k", 3); !errors.Is(err, core.ErrInvalidCost) {
		t.Errorf("a cost above the limit: %v", err)
	}
	if _, err := l.AllowN(ended, "k", 2); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context: %v", err)
	}
	if d, err := l.AllowN(ctx, "k", 2); err != nil || d.Allowed || l.Hits() != 1 {
		t.Errorf("the denial stays cached: %+v, %v, %d hits", d, err, l.Hits())
	}
}

// A Refund the limiter refuses (a bad cost or an ended context: nothing
// was refunded) keeps the key's cached denial; one it accepts drops it.
// (A key the limiter refuses has no cached denial: AllowN refuses it too.)
func TestRefusedRefundKeepsTheDenial(t *testing.T) {
	s, _ := memory.New()
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	next := &counting{Limiter: tb}
	l := newCache(t, next)
	ctx := context.Background()
	l.AllowN(ctx, "k", 2)
	if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed || next.calls.Load() != 2 {
		t.Fatalf("denial: %+v, %v", d, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		key  string
		n    int64
		want error
	}{
		{"a cost of 0", ctx, "k", 0, core.ErrInvalidCost},
		{"a negative cost", ctx, "k", -1, core.ErrInvalidCost},
		{"a cost above MaxCost", ctx, "k", 3, core.ErrInvalidCost},
		{"an ended context", ended, "k", 1, context.Canceled},
		{"an ended context and a bad cost", ended, "k", 0, core.ErrInvalidCost},
	} {
		if _, err := l.Refund(c.ctx, c.key, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s: Refund: %v, want %v", c.name, err, c.want)
		}
		hits := l.Hits()
		if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed || l.Hits() != hits+1 || next.calls.Load() != 2 {
			t.Errorf("after a Refund with %s: %+v, %v, %d store calls; want the cached denial", c.name, d, err, next.calls.Load())
		}
	}
	if _, err := l.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || next.calls.Load() != 3 {
		t.Errorf("after a Refund: %+v, %v, %d store calls; want the store's decision", d, err, next.calls.Load())
	}
}

// New refuses, with an error wrapping core.ErrInvalidConfig, a next
// limiter that cannot decide, a nil option and a clock it cannot use; a
// zero Limiter, and a nil one, fail every call the same way.
func TestNewRefuses(t *testing.T) {
	s, _ := memory.New()
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour})
	var nilBucket *ratekit.Limiter
	var nilClock *fakeclock.Clock
	for name, err := range map[string]error{
		"nil":                 second(denycache.New(nil)),
		"a typed nil":         second(denycache.New(nilBucket)),
		"a zero limiter":      second(denycache.New(&ratekit.Limiter{})),
		"a zero cache":        second(denycache.New(&denycache.Limiter{})),
		"a nil option":        second(denycache.New(tb, nil)),
		"a nil clock":         second(denycache.New(tb, denycache.WithClock(nil))),
		"a nil fakeclock":     second(denycache.New(tb, denycache.WithClock(nilClock))),
		"a clock before 1970": second(denycache.New(tb, denycache.WithClock(fakeclock.New(time.Unix(-1, 0))))),
	} {
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	ctx := context.Background()
	var nilCache *denycache.Limiter
	for name, l := range map[string]*denycache.Limiter{"zero": {}, "nil": nilCache} {
		if _, err := l.Allow(ctx, "k"); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: Allow: %v", name, err)
		}
		if _, err := l.Peek(ctx, "k"); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: Peek: %v", name, err)
		}
		if _, err := l.Refund(ctx, "k", 1); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: Refund: %v", name, err)
		}
		if err := l.Reset(ctx, "k"); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: Reset: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// A full cache makes room for a new key's denial by dropping one that
// has ended: it does not stop caching once MaxKeys keys were denied.
func TestFullCacheDropsEndedDenials(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute, Clock: clock})
	l := newCache(t, tb, denycache.WithMaxKeys(1), denycache.WithClock(clock))
	ctx := context.Background()
	deny := func(key string) {
		for range 3 {
			l.Allow(ctx, key)
		}
	}
	deny("a") // cached, its third call answered here
	if l.Hits() != 1 {
		t.Fatalf("%d hits after a, want 1", l.Hits())
	}
	// Until a's denial ends the cache is full: b goes uncached.
	deny("b")
	if l.Hits() != 1 {
		t.Fatalf("%d hits after b, want 1 (the cache is full)", l.Hits())
	}
	clock.Advance(time.Hour) // a's denial (and b's) has ended
	// A new key's own shard is sampled: one of 64 shards holds a's
	// denial, so among 2000 keys some land there (all but surely).
	for i := range 2000 {
		deny("c" + strconv.Itoa(i))
		if l.Hits() > 1 {
			return
		}
	}
	t.Fatalf("%d hits: no denial was cached after the one cached had ended", l.Hits())
}

// A deny cache wraps a policy as any limiter: a policy's denial is cached
// and answered here, Limits included, until it ends; Refund forgets it
// and refunds every limit; MaxCost is the policy's.
func TestWrapsAPolicy(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second, Prefix: "tb:", Clock: clock})
	fw, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 2, Window: time.Minute, Prefix: "fw:", Clock: clock})
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: tb}, {Name: "minute", Limiter: fw}}})
	if err != nil {
		t.Fatal(err)
	}
	next := &counting{Limiter: p}
	l := newCache(t, next, denycache.WithClock(clock))
	if l.MaxCost() != 2 {
		t.Fatalf("MaxCost %d, want the policy's 2", l.MaxCost())
	}
	ctx := context.Background()
	l.AllowN(ctx, "k", 2)
	d, err := l.Allow(ctx, "k") // denied by the minute
	if err != nil || d.Allowed || d.RetryAfter != time.Minute || len(d.Limits) != 2 || d.Limits[1].Allowed {
		t.Fatalf("denial: %+v, %v", d, err)
	}
	first := d
	clock.Advance(10 * time.Second)
	d, err = l.Allow(ctx, "k")
	if err != nil || d.Allowed || d.RetryAfter != 50*time.Second || len(d.Limits) != 2 || l.Hits() != 1 || next.calls.Load() != 2 {
		t.Fatalf("cached: %+v, %v, %d hits, %d calls; want the denial from here", d, err, l.Hits(), next.calls.Load())
	}
	// Each limit's waits are counted down too, and the cached denial is
	// not changed by the answer.
	for i, ld := range d.Limits {
		f := first.Limits[i]
		if ld.RetryAfter != max(f.RetryAfter-10*time.Second, 0) || ld.ResetAfter != max(f.ResetAfter-10*time.Second, 0) {
			t.Errorf("limit %s: RetryAfter %v, ResetAfter %v; want %v and %v less 10 s", ld.Name, ld.RetryAfter, ld.ResetAfter, f.RetryAfter, f.ResetAfter)
		}
	}
	if again, _ := l.Allow(ctx, "k"); !reflect.DeepEqual(again, d) {
		t.Fatalf("the same cached denial twice at one time: %+v, then %+v", d, again)
	}
	if d, err := l.Refund(ctx, "k", 2); err != nil || len(d.Limits) != 2 || d.Limits[0].Remaining != 5 || d.Limits[1].Remaining != 2 {
		t.Fatalf("Refund: %+v, %v; want every limit refunded", d, err)
	}
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || next.calls.Load() != 3 {
		t.Fatalf("after the refund: %+v, %v, %d calls; want the store's decision", d, err, next.calls.Load())
	}
}
