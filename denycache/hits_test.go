package denycache_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// TestHits: Hits counts exactly the denials answered without asking the
// next limiter, so that with the next limiter's calls they add up to
// every AllowN.
func TestHits(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := memory.New(memory.WithClock(clock))
	defer s.Close()
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: 10 * time.Second, Clock: clock})
	next := &counting{Limiter: tb}
	l := newCache(t, next, denycache.WithClock(clock))
	ctx := context.Background()
	for i, want := range []struct {
		allowed     bool
		calls, hits int64
	}{
		{true, 1, 0},  // allowed by the store
		{false, 2, 0}, // denied by the store, cached
		{false, 2, 1}, // denied from the cache
		{false, 2, 2},
		{false, 2, 3},
	} {
		d, err := l.Allow(ctx, "k")
		if err != nil || d.Allowed != want.allowed || next.calls.Load() != want.calls || int64(l.Hits()) != want.hits {
			t.Fatalf("call %d: allowed %v, %v; store calls %d, hits %d; want %+v", i, d.Allowed, err, next.calls.Load(), l.Hits(), want)
		}
	}
	if l.Unwrap() != next {
		t.Fatal("Unwrap() is not the limiter behind the cache")
	}
}
