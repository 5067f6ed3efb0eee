package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

func TestWaitSleepsExactlyRetryAfter(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lim, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := lim.AllowN(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Millisecond)

	var sleeps []time.Duration
	w := core.Waiter{Sleep: func(_ context.Context, d time.Duration) error {
		sleeps = append(sleeps, d)
		clock.Advance(d)
		return nil
	}}
	d, err := w.Wait(ctx, lim, "k", 2)
	if err != nil || !d.Allowed {
		t.Fatalf("Wait = %+v, %v", d, err)
	}
	// Two tokens are there 2 s after they were taken: one sleep of 1.7 s.
	if len(sleeps) != 1 || sleeps[0] != 1700*time.Millisecond {
		t.Fatalf("slept %v, want [1.7s]", sleeps)
	}
}

func TestWaitStopsWithContext(t *testing.T) {
	store, _ := memory.New()
	defer store.Close()
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour})
	// The only token is taken without a deadline: under the 20 ms
	// context, a saturated machine could make this call fail, and Wait
	// would then find the token instead of waiting until its context ends.
	if d, err := lim.Allow(context.Background(), "k"); err != nil || !d.Allowed {
		t.Fatalf("Allow = %+v, %v", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	d, err := core.Wait(ctx, lim, "k", 1)
	// The context's end wraps ErrStore, as a limiter's call reports it.
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, core.ErrStore) || d.Allowed {
		t.Fatalf("Wait = %+v, %v; want DeadlineExceeded and ErrStore", d, err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Wait ignored the context for %v", waited)
	}
	if _, err := core.Wait(context.Background(), lim, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("Wait(n=0) = %v", err)
	}
}
