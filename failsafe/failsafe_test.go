package failsafe_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/store/memory"
)

// flaky is a limiter whose store can be switched off.
type flaky struct {
	core.Limiter
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flaky) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return f.Limiter.AllowN(ctx, key, n)
}

func bucket(t *testing.T, capacity int64) core.Limiter {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPolicies(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		policy  failsafe.Policy
		allowed []bool // four calls while the store is down
	}{
		{failsafe.FailOpen, []bool{true, true, true, true}},
		{failsafe.FailClosed, []bool{false, false, false, false}},
		{failsafe.FailLocal, []bool{true, true, false, false}}, // a local bucket of 2
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			now := time.Unix(1000, 0)
			store := &flaky{Limiter: bucket(t, 5)}
			var errs []error
			l, err := failsafe.New(failsafe.Config{
				Store: store, Policy: tt.policy, Local: bucket(t, 2),
				RetryInterval: time.Second,
				OnError:       func(_ string, err error) { errs = append(errs, err) },
				Now:           func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 4 {
				t.Fatalf("store up: %+v, %v", d, err)
			}
			store.down.Store(true)
			for i, want := range tt.allowed {
				d, err := l.Allow(ctx, "k")
				if err != nil || d.Allowed != want {
					t.Fatalf("call %d while down: %+v, %v; want allowed=%v", i, d, err, want)
				}
			}
			// The store was tried once, then left alone for RetryInterval.
			if store.calls.Load() != 2 || len(errs) != 1 || !errors.Is(errs[0], core.ErrStore) || !l.Down() {
				t.Fatalf("store calls %d, errors %v, down %v", store.calls.Load(), errs, l.Down())
			}
			// After RetryInterval it is tried again, and used once it answers.
			store.down.Store(false)
			now = now.Add(time.Second)
			if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 3 {
				t.Fatalf("store back: %+v, %v", d, err)
			}
			// Bad calls are the caller's: returned, not covered by the policy.
			if _, err := l.AllowN(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("bad cost: %v", err)
			}
			if l.Down() {
				t.Fatal("a bad call took the store down")
			}
		})
	}
}

type slow struct{ core.Limiter }

func (s slow) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	<-ctx.Done()
	return core.Decision{}, fmt.Errorf("%w: %w", core.ErrStore, ctx.Err())
}

func TestTimeout(t *testing.T) {
	l, err := failsafe.New(failsafe.Config{Store: slow{bucket(t, 1)}, Policy: failsafe.FailClosed, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := l.Allow(context.Background(), "k")
	if err != nil || d.Allowed || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v, %v after %v", d, err, time.Since(start))
	}
	// The caller's own context ending is the caller's error.
	l2, _ := failsafe.New(failsafe.Config{Store: slow{bucket(t, 1)}, Policy: failsafe.FailOpen})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l2.Allow(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	b := bucket(t, 1)
	for name, cfg := range map[string]failsafe.Config{
		"no store":           {},
		"local without one":  {Store: b, Policy: failsafe.FailLocal},
		"unknown policy":     {Store: b, Policy: 7},
		"negative timeout":   {Store: b, Timeout: -1},
		"negative retry gap": {Store: b, RetryInterval: -1},
	} {
		if _, err := failsafe.New(cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
