package concurrency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// A clock that reads a time ratekit cannot compute with is refused when
// the limiter is built: a nil *fakeclock.Clock reads the zero time.
func TestNewRefusesBadClock(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, c := range map[string]core.Clock{"a nil *fakeclock.Clock": (*fakeclock.Clock)(nil), "a nil core.ClockFunc": core.ClockFunc(nil)} {
		if l, err := concurrency.New(s, concurrency.Config{Limit: 1, TTL: time.Second, Clock: c}); !errors.Is(err, core.ErrInvalidConfig) || l != nil {
			t.Errorf("%s: %v, %v; want ErrInvalidConfig", name, l, err)
		}
	}
}

// A zero or nil Limiter cannot decide: every call is an error wrapping
// core.ErrInvalidConfig, and nothing panics.
func TestZeroLimiter(t *testing.T) {
	ctx := context.Background()
	lease := concurrency.Lease{Key: "k", N: 1, ID: "0123456789abcdef0123456789abcdef"}
	for name, l := range map[string]*concurrency.Limiter{"zero": {}, "nil": nil} {
		_, _, errAcquire := l.Acquire(ctx, "k")
		_, errRelease := l.Release(ctx, lease)
		_, errExtend := l.Extend(ctx, lease)
		_, errPeek := l.Peek(ctx, "k")
		for what, err := range map[string]error{"Acquire": errAcquire, "Release": errRelease, "Extend": errExtend, "Peek": errPeek, "Reset": l.Reset(ctx, "k")} {
			if !errors.Is(err, core.ErrInvalidConfig) {
				t.Errorf("%s Limiter: %s = %v, want ErrInvalidConfig", name, what, err)
			}
		}
		if l.Limit() != 0 || l.TTL() != 0 || l.Algorithm() != "" || l.Store() != nil {
			t.Errorf("%s Limiter: Limit %d, TTL %v, Algorithm %q, Store %v", name, l.Limit(), l.TTL(), l.Algorithm(), l.Store())
		}
	}
}

// Every decision's Window is the TTL, by which every lease has come back.
func TestWindowIsTheTTL(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := concurrency.New(s, concurrency.Config{Limit: 1, TTL: 30 * time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, granted, err := l.Acquire(ctx, "k")
	if err != nil || !granted.Allowed {
		t.Fatalf("Acquire: %+v, %v", granted, err)
	}
	_, denied, err := l.Acquire(ctx, "k")
	if err != nil || denied.Allowed {
		t.Fatalf("second Acquire: %+v, %v", denied, err)
	}
	peek, err := l.Peek(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for what, d := range map[string]core.Decision{"granted": granted, "denied": denied, "peek": peek} {
		if d.Window != 30*time.Second || d.Limit != 1 {
			t.Errorf("%s: %+v, want Limit 1 and Window 30s", what, d)
		}
	}
}
