package denycache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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

func (c *counting) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	c.calls.Add(1)
	return c.Limiter.AllowN(ctx, key, n)
}

func TestDenialsAreServedLocallyUntilRetryAfter(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: 10 * time.Second, Clock: clock})
	next := &counting{Limiter: tb}
	l := denycache.New(next, denycache.WithClock(clock.Now))
	ctx := context.Background()

	if d, _ := l.AllowN(ctx, "k", 3); !d.Allowed {
		t.Fatal("first request denied")
	}
	d, _ := l.AllowN(ctx, "k", 2) // denied by the store: 20 s to wait
	if d.Allowed || d.RetryAfter != 20*time.Second || next.calls.Load() != 2 {
		t.Fatalf("%+v after %d calls", d, next.calls.Load())
	}
	clock.Advance(5 * time.Second)
	for _, n := range []int64{2, 3} { // the same or a higher cost: local
		d, _ = l.AllowN(ctx, "k", n)
		if d.Allowed || d.RetryAfter != 15*time.Second || next.calls.Load() != 2 {
			t.Fatalf("cost %d: %+v after %d store calls", n, d, next.calls.Load())
		}
	}
	// A lower cost may pass: it goes to the store (and is denied: 1 token
	// comes at 10 s), and its denial is cached in turn.
	if d, _ = l.AllowN(ctx, "k", 1); d.Allowed || d.RetryAfter != 5*time.Second || next.calls.Load() != 3 {
		t.Fatalf("lower cost: %+v after %d store calls", d, next.calls.Load())
	}
	// When RetryAfter ends, the store decides again, exactly as without
	// the cache.
	clock.Advance(5 * time.Second)
	if d, _ = l.AllowN(ctx, "k", 1); !d.Allowed || next.calls.Load() != 4 {
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
	l := denycache.New(tb, denycache.WithClock(clock.Now))
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
	s, _ := memory.New()
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour})
	next := &counting{Limiter: tb}
	l := denycache.New(next, denycache.WithMaxKeys(64)) // one per shard
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		k := string(rune('a'+i%26)) + time.Duration(i).String()
		l.Allow(ctx, k)
		l.Allow(ctx, k)
		l.Allow(ctx, k)
	}
	if next.calls.Load() < 3000-64 {
		t.Fatalf("%d store calls: more than 64 keys cached", next.calls.Load())
	}
}
