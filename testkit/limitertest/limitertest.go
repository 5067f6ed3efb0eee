// Package limitertest holds helpers for the algorithms' unit tests: a
// memory store and a fake clock wired together, and a scripted walk that
// checks every Decision field.
//
// It is one of ratekit's own test kits (testkit/): importable, so that
// the stores' modules can use it, with no promise of compatibility.
package limitertest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// T0 is a start time aligned to every whole-second window.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Env is a memory store and a fake clock at T0, shared by the limiter
// under test.
type Env struct {
	Store *memory.Store
	Clock *fakeclock.Clock
}

// New returns an Env whose store is closed when t ends.
func New(t *testing.T) *Env {
	t.Helper()
	clock := fakeclock.New(T0)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &Env{Store: s, Clock: clock}
}

// Step is one request of a walk: advance the clock, then AllowN (or Peek
// when N is 0), and expect Want, every field (Window included).
type Step struct {
	Advance time.Duration
	N       int64
	Want    core.Decision
}

// Walk runs steps against l on key "k".
func (e *Env) Walk(t *testing.T, l core.Limiter, steps []Step) {
	t.Helper()
	ctx := context.Background()
	for i, s := range steps {
		e.Clock.Advance(s.Advance)
		var got core.Decision
		var err error
		if s.N == 0 {
			got, err = l.Peek(ctx, "k")
		} else {
			got, err = l.AllowN(ctx, "k", s.N)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, s.Want) {
			t.Fatalf("step %d at +%v, n=%d:\n got  %+v\n want %+v", i, e.Clock.Now().Sub(T0), s.N, got, s.Want)
		}
	}
}

// BadConfig checks that build fails with core.ErrInvalidConfig naming field.
func BadConfig(t *testing.T, name, field string, build func() error) {
	t.Helper()
	err := build()
	if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), field) {
		t.Errorf("%s: got %v, want ErrInvalidConfig naming %s", name, err, field)
	}
}

// BadCalls checks the call errors every limiter shares, for a limiter whose
// largest cost is limit, and that none of them consumed anything.
func BadCalls(t *testing.T, l core.Limiter, limit int64) {
	t.Helper()
	ctx := context.Background()
	before, err := l.Peek(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"empty key", second(l.Allow(ctx, "")), core.ErrInvalidKey},
		{"huge key", second(l.Allow(ctx, strings.Repeat("x", core.MaxKeyLen+1))), core.ErrInvalidKey},
		{"peek empty key", second(l.Peek(ctx, "")), core.ErrInvalidKey},
		{"reset empty key", l.Reset(ctx, ""), core.ErrInvalidKey},
		{"zero cost", second(l.AllowN(ctx, "k", 0)), core.ErrInvalidCost},
		{"negative cost", second(l.AllowN(ctx, "k", -3)), core.ErrInvalidCost},
		{"cost above limit", second(l.AllowN(ctx, "k", limit+1)), core.ErrInvalidCost},
		{"max int64 cost", second(l.AllowN(ctx, "k", 1<<63-1)), core.ErrInvalidCost},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if after, err := l.Peek(ctx, "k"); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("bad calls changed the state: %+v, then %+v (%v)", before, after, err)
	}
}

func second(_ core.Decision, err error) error { return err }

// BadClock checks that l, whose Clock is e.Clock, refuses times it cannot
// compute with (before 1970, after 2112) with core.ErrInvalidTime, and
// that none of them consumed anything. It leaves the clock where it was.
func (e *Env) BadClock(t *testing.T, l core.Limiter) {
	t.Helper()
	ctx := context.Background()
	now := e.Clock.Now()
	defer e.Clock.Set(now)
	before, err := l.Peek(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{time.Unix(-1, 0), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)} {
		e.Clock.Set(at)
		if _, err := l.Allow(ctx, "k"); !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("Allow with the clock at %v: %v, want %v", at, err, core.ErrInvalidTime)
		}
		if _, err := l.Peek(ctx, "k"); !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("Peek with the clock at %v: %v, want %v", at, err, core.ErrInvalidTime)
		}
	}
	e.Clock.Set(now)
	if after, err := l.Peek(ctx, "k"); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("calls at bad times changed the state: %+v, then %+v (%v)", before, after, err)
	}
}

// PeekNeverWrites checks that Peek on new keys stores nothing.
func (e *Env) PeekNeverWrites(t *testing.T, l core.Limiter) {
	t.Helper()
	n := e.Store.Len()
	for _, k := range []string{"p1", "p2", "p3"} {
		if _, err := l.Peek(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if e.Store.Len() != n {
		t.Fatalf("Peek stored %d keys", e.Store.Len()-n)
	}
}
