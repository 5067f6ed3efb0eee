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

// ptrLimiter is a limiter type whose nil pointer satisfies core.Limiter.
type ptrLimiter struct{ core.Limiter }

func TestConfigErrors(t *testing.T) {
	b := bucket(t, 1)
	var nilStore *ptrLimiter
	for name, cfg := range map[string]failsafe.Config{
		"no store":                 {},
		"nil pointer store":        {Store: nilStore},
		"local without one":        {Store: b, Policy: failsafe.FailLocal},
		"nil pointer local":        {Store: b, Policy: failsafe.FailLocal, Local: nilStore},
		"nil pointer unused local": {Store: b, Policy: failsafe.FailOpen, Local: nilStore},
		"unknown policy":           {Store: b, Policy: 7},
		"negative timeout":         {Store: b, Timeout: -1},
		"negative retry gap":       {Store: b, RetryInterval: -1},
		"negative calls in flight": {Store: b, MaxInFlight: -1},
	} {
		if _, err := failsafe.New(cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// gated is a store that fails while down and, when hold is set, blocks
// every call until release is closed.
type gated struct {
	core.Limiter
	down    atomic.Bool
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (g *gated) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	g.calls.Add(1)
	if g.entered != nil {
		g.entered <- struct{}{}
		<-g.release
	}
	if g.down.Load() {
		return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return g.Limiter.AllowN(ctx, key, n)
}

// TestOneProbe: once RetryInterval has passed, one call probes the store
// while every other call goes on with the policy, and the limiter stays
// Down until the probe gets an answer.
func TestOneProbe(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	store := &gated{Limiter: bucket(t, 5)}
	store.down.Store(true)
	l, err := failsafe.New(failsafe.Config{
		Store: store, Policy: failsafe.FailClosed, RetryInterval: time.Second,
		Now: func() time.Time { return time.Unix(0, now.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed || !l.Down() {
		t.Fatalf("first failure: %+v, %v, down %v", d, err, l.Down())
	}
	store.down.Store(false)
	store.entered, store.release = make(chan struct{}), make(chan struct{})
	now.Add(int64(time.Second))
	probe := make(chan core.Decision)
	go func() {
		d, _ := l.Allow(ctx, "k")
		probe <- d
	}()
	<-store.entered // the probe is in the store
	for i := 0; i < 10; i++ {
		if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed {
			t.Fatalf("call %d during the probe: %+v, %v; want the policy's denial", i, d, err)
		}
	}
	if !l.Down() || store.calls.Load() != 2 {
		t.Fatalf("during the probe: down %v, store calls %d; want true, 2", l.Down(), store.calls.Load())
	}
	close(store.release)
	if d := <-probe; !d.Allowed {
		t.Fatalf("probe: %+v", d)
	}
	store.entered = nil
	if l.Down() {
		t.Fatal("still down after the probe got an answer")
	}
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 3 {
		t.Fatalf("after the probe: %+v, %v", d, err)
	}
}

// TestFailedProbe: a probe that fails leaves the store alone for another
// RetryInterval.
func TestFailedProbe(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store := &flaky{Limiter: bucket(t, 5)}
	store.down.Store(true)
	l, err := failsafe.New(failsafe.Config{
		Store: store, Policy: failsafe.FailOpen, RetryInterval: time.Second,
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		for i := 0; i < 5; i++ {
			if _, err := l.Allow(ctx, "k"); err != nil {
				t.Fatal(err)
			}
		}
		if got := store.calls.Load(); got != int64(step+1) || !l.Down() {
			t.Fatalf("step %d: store calls %d, down %v; want %d, true", step, got, l.Down(), step+1)
		}
		now = now.Add(999 * time.Millisecond)
		l.Allow(ctx, "k")
		if got := store.calls.Load(); got != int64(step+1) {
			t.Fatalf("step %d: store tried %v before RetryInterval", step, time.Duration(999*time.Millisecond))
		}
		now = now.Add(time.Millisecond)
	}
}
