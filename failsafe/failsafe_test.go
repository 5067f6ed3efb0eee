package failsafe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// flaky is a limiter whose store can be switched off.
type flaky struct {
	core.Limiter
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flaky) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return f.Limiter.Decide(ctx, r)
	}
	f.calls.Add(1)
	if f.down.Load() {
		return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return f.Limiter.Decide(ctx, r)
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

func TestModes(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		mode    failsafe.Mode
		allowed []bool // four calls while the store is down
	}{
		{failsafe.FailOpen, []bool{true, true, true, true}},
		{failsafe.FailClosed, []bool{false, false, false, false}},
		{failsafe.FailLocal, []bool{true, true, false, false}}, // a local bucket of 2
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			now := time.Unix(1000, 0)
			store := &flaky{Limiter: bucket(t, 5)}
			var errs []error
			l, err := failsafe.New(failsafe.Config{
				Limiter: store, Mode: tt.mode, Local: bucket(t, 2),
				RetryInterval: time.Second,
				OnError:       func(_ string, err error) { errs = append(errs, err) },
				Clock:         core.ClockFunc(func() time.Time { return now }),
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
			// Bad calls are the caller's: returned, not covered by the mode.
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

func (s slow) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return s.Limiter.Decide(ctx, r)
	}
	<-ctx.Done()
	return core.Decision{}, fmt.Errorf("%w: %w", core.ErrStore, ctx.Err())
}

func TestTimeout(t *testing.T) {
	l, err := failsafe.New(failsafe.Config{Limiter: slow{bucket(t, 1)}, Mode: failsafe.FailClosed, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := l.Allow(context.Background(), "k")
	if err != nil || d.Allowed || time.Since(start) > 5*time.Second {
		t.Fatalf("%+v, %v after %v", d, err, time.Since(start))
	}
	// The caller's own context ending is the caller's error.
	l2, _ := failsafe.New(failsafe.Config{Limiter: slow{bucket(t, 1)}, Mode: failsafe.FailOpen})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l2.Allow(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline: %v", err)
	}
}

// ptrLimiter is a limiter type whose nil pointer satisfies core.Limiter
// and, as the interface asks of a limiter that cannot decide, has a
// MaxCost of 0.
type ptrLimiter struct{ core.Limiter }

func (p *ptrLimiter) MaxCost() int64 {
	if p == nil || p.Limiter == nil {
		return 0
	}
	return p.Limiter.MaxCost()
}

func TestConfigErrors(t *testing.T) {
	b := bucket(t, 1)
	var nilStore *ptrLimiter
	for name, cfg := range map[string]failsafe.Config{
		"no store":                 {},
		"nil pointer store":        {Limiter: nilStore},
		"local without one":        {Limiter: b, Mode: failsafe.FailLocal},
		"nil pointer local":        {Limiter: b, Mode: failsafe.FailLocal, Local: nilStore},
		"nil pointer unused local": {Limiter: b, Mode: failsafe.FailOpen, Local: nilStore},
		"a nil *ratekit.Limiter":   {Limiter: (*ratekit.Limiter)(nil)},
		"a wrapper of nothing":     {Limiter: &ptrLimiter{}},
		"a nil *fakeclock.Clock":   {Limiter: b, Clock: (*fakeclock.Clock)(nil)},
		"unknown mode":             {Limiter: b, Mode: 7},
		"negative timeout":         {Limiter: b, Timeout: -1},
		"negative retry gap":       {Limiter: b, RetryInterval: -1},
		"negative calls in flight": {Limiter: b, MaxInFlight: -1},
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

func (g *gated) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return g.Limiter.Decide(ctx, r)
	}
	g.calls.Add(1)
	if g.entered != nil {
		g.entered <- struct{}{}
		<-g.release
	}
	if g.down.Load() {
		return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return g.Limiter.Decide(ctx, r)
}

// TestOneProbe: once RetryInterval has passed, one call probes the store
// while every other call goes on with the mode, and the limiter stays
// Down until the probe gets an answer.
func TestOneProbe(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	store := &gated{Limiter: bucket(t, 5)}
	store.down.Store(true)
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailClosed, RetryInterval: time.Second,
		Clock: core.ClockFunc(func() time.Time { return time.Unix(0, now.Load()) }),
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
			t.Fatalf("call %d during the probe: %+v, %v; want the mode's denial", i, d, err)
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
		Limiter: store, Mode: failsafe.FailOpen, RetryInterval: time.Second,
		Clock: core.ClockFunc(func() time.Time { return now }),
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

// Unwrap lets failsafe find the store's limiter's MaxCost.
func (f *flaky) Unwrap() core.Limiter { return f.Limiter }

// While the mode decides, the caller's own mistakes are still errors,
// as the store's limiter would return them: the mode never allows (or
// denies) an empty key, a cost the limiter refuses, or a call whose
// context has ended.
func TestCallerErrorsWhileDown(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	for _, mode := range []failsafe.Mode{failsafe.FailOpen, failsafe.FailClosed, failsafe.FailLocal} {
		store := &flaky{Limiter: bucket(t, 5)}
		l, err := failsafe.New(failsafe.Config{Limiter: store, Mode: mode, Local: bucket(t, 5), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		store.down.Store(true)
		if _, err := l.Allow(ctx, "k"); err != nil || !l.Down() {
			t.Fatalf("%v: the store failing: %v, down %v", mode, err, l.Down())
		}
		for _, c := range []struct {
			ctx  context.Context
			key  string
			n    int64
			want error
		}{
			{ctx, "", 1, core.ErrInvalidKey},
			{ctx, "k", 0, core.ErrInvalidCost},
			{ctx, "k", -1, core.ErrInvalidCost},
			{ctx, "k", 6, core.ErrInvalidCost}, // above the bucket's capacity
			{ended, "k", 1, context.Canceled},
		} {
			if d, err := l.AllowN(c.ctx, c.key, c.n); !errors.Is(err, c.want) || d.Allowed {
				t.Errorf("%v: AllowN(%q, %d) while down: %+v, %v; want %v", mode, c.key, c.n, d, err, c.want)
			}
		}
		if _, err := l.Peek(ctx, ""); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("%v: Peek of an empty key while down: %v", mode, err)
		}
		if d, err := l.AllowN(ctx, "j", 5); err != nil || d.Allowed != (mode != failsafe.FailClosed) {
			t.Errorf("%v: AllowN(5) while down: %+v, %v", mode, d, err)
		}
	}
}

// State the limiter did not write is the key's problem, not the store's:
// the error comes back as it is, the store stays up for every other key,
// and nothing is logged (the error names the key).
func TestCorruptStateIsNotAnOutage(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tb, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second, Prefix: "x:"})
	if err != nil {
		t.Fatal(err)
	}
	// A value of another shape at tb's key of "bad".
	if _, err := s.RunScript(ctx, core.NewScript("other", "", func(tx core.Tx, keys []string, _, reply []int64) ([]int64, error) {
		tx.Put(keys[0], 1, time.Hour)[0] = 1
		return reply, nil
	}, false), []string{"x:{bad}"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	var reported []error
	l, err := failsafe.New(failsafe.Config{
		Limiter: tb, Mode: failsafe.FailOpen,
		OnError: func(_ string, err error) { reported = append(reported, err) },
		Logger:  slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "bad"); !errors.Is(err, core.ErrCorruptState) || d.Allowed {
		t.Errorf("corrupt key: %+v, %v; want ErrCorruptState", d, err)
	}
	if d, err := l.Allow(ctx, "good"); err != nil || !d.Allowed || d.Remaining != 4 {
		t.Errorf("another key after it: %+v, %v; want the store's decision", d, err)
	}
	if l.State() != failsafe.Up || len(reported) != 0 || logged.Len() != 0 {
		t.Errorf("state %v, OnError got %v, logged %q", l.State(), reported, logged.String())
	}
}

func TestRetryIntervalBound(t *testing.T) {
	_, err := failsafe.New(failsafe.Config{Limiter: bucket(t, 1), RetryInterval: failsafe.MaxRetryInterval + 1})
	if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "RetryInterval") {
		t.Errorf("RetryInterval above the bound: %v", err)
	}
	if _, err := failsafe.New(failsafe.Config{Limiter: bucket(t, 1), RetryInterval: failsafe.MaxRetryInterval}); err != nil {
		t.Errorf("RetryInterval at the bound: %v", err)
	}
}

// switchable is a store that fails every call while down, as an
// unreachable Redis does.
type switchable struct {
	s    *memory.Store
	down atomic.Bool
}

func (w *switchable) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if w.down.Load() {
		return nil, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return w.s.RunScript(ctx, s, keys, args, reply)
}

// failsafe wraps a policy as any limiter: its decisions, with each
// limit's, while the store answers; the mode's while it fails (under
// FailLocal, a local policy's, with its limits; Refund too).
func TestWrapsAPolicy(t *testing.T) {
	policy := func(r core.ScriptRunner) *ratekit.Limiter {
		t.Helper()
		tb, err := tokenbucket.New(r, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Hour, Prefix: "tb:"})
		if err != nil {
			t.Fatal(err)
		}
		fw, err := fixedwindow.New(r, fixedwindow.Config{Limit: 5, Window: time.Hour, Prefix: "fw:"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: tb}, {Name: "hour", Limiter: fw}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	newMem := func() *memory.Store {
		s, err := memory.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	for _, mode := range []failsafe.Mode{failsafe.FailOpen, failsafe.FailClosed, failsafe.FailLocal} {
		t.Run(mode.String(), func(t *testing.T) {
			store := &switchable{s: newMem()}
			now := time.Unix(1000, 0)
			l, err := failsafe.New(failsafe.Config{
				Limiter: policy(store), Mode: mode, Local: policy(newMem()),
				RetryInterval: time.Second, Logger: slog.New(slog.DiscardHandler),
				Clock: core.ClockFunc(func() time.Time { return now }),
			})
			if err != nil {
				t.Fatal(err)
			}
			if l.MaxCost() != 3 {
				t.Fatalf("MaxCost %d, want the policy's 3", l.MaxCost())
			}
			d, err := l.AllowN(ctx, "k", 2)
			if err != nil || !d.Allowed || d.Remaining != 1 || len(d.Limits) != 2 {
				t.Fatalf("store up: %+v, %v; want the policy's decision", d, err)
			}
			store.down.Store(true)
			d, err = l.AllowN(ctx, "k", 2)
			switch mode {
			case failsafe.FailOpen:
				if err != nil || !d.Allowed || d.Limits != nil {
					t.Fatalf("down, fail open: %+v, %v", d, err)
				}
			case failsafe.FailClosed:
				if err != nil || d.Allowed || d.RetryAfter != time.Second {
					t.Fatalf("down, fail closed: %+v, %v", d, err)
				}
			case failsafe.FailLocal:
				if err != nil || !d.Allowed || d.Remaining != 1 || len(d.Limits) != 2 {
					t.Fatalf("down, local: %+v, %v; want the local policy's decision", d, err)
				}
				if d, err := l.Refund(ctx, "k", 2); err != nil || d.Remaining != 3 || len(d.Limits) != 2 {
					t.Fatalf("down, local Refund: %+v, %v", d, err)
				}
			}
			if _, err := l.AllowN(ctx, "k", 4); !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("down: a cost above the policy's MaxCost: %v", err)
			}
			store.down.Store(false)
			now = now.Add(time.Second)
			if d, err := l.Peek(ctx, "k"); err != nil || d.Remaining != 1 || len(d.Limits) != 2 {
				t.Fatalf("store back: %+v, %v; want the store's state", d, err)
			}
		})
	}
}
