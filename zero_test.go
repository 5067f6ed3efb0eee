package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

// A limiter declared but never built by its New, or a nil *Limiter, fails
// every call with an error wrapping core.ErrInvalidConfig, and describes
// itself as empty: it never panics. That covers every kind of limiter:
// an algorithm's, a policy, a coalescing one.
func TestZeroLimiters(t *testing.T) {
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", what, err)
		}
	}
	var nilLimiter *ratekit.Limiter
	for name, l := range map[string]*ratekit.Limiter{"zero": {}, "nil": nilLimiter} {
		_, err := l.Allow(ctx, "k")
		check(name+": Allow", err)
		_, err = l.AllowN(ctx, "k", 1)
		check(name+": AllowN", err)
		_, err = l.Peek(ctx, "k")
		check(name+": Peek", err)
		_, err = l.Refund(ctx, "k", 1)
		check(name+": Refund", err)
		check(name+": Reset", l.Reset(ctx, "k"))
		granted, _, err := l.AllowAtMost(ctx, "k", 1)
		check(name+": AllowAtMost", err)
		if granted != 0 {
			t.Errorf("%s: AllowAtMost granted %d", name, granted)
		}
		for _, r := range l.AllowMany(ctx, []core.Request{{Key: "k", N: 1}, {Key: "j", N: 1}}) {
			check(name+": AllowMany", r.Err)
		}
		if l.Algorithm() != "" || l.Store() != nil || l.MaxCost() != 0 {
			t.Errorf("a %s Limiter describes itself as %q on %v, MaxCost %d", name, l.Algorithm(), l.Store(), l.MaxCost())
		}
		c, err := ratekit.Coalesce(l)
		check(name+": Coalesce", err)
		if c != nil {
			t.Errorf("Coalesce of a %s Limiter made one", name)
		}
		_, err = ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: l}}})
		check(name+": NewPolicy of it", err)
		_, err = ratekit.NewTiers(map[string]*ratekit.Limiter{"x": l})
		check(name+": NewTiers of it", err)
	}

	var c concurrency.Limiter
	_, _, err := c.Acquire(ctx, "k")
	check("concurrency Acquire", err)
	_, err = c.Release(ctx, concurrency.Lease{Key: "k", N: 1, ID: "0123456789abcdef0123456789abcdef"})
	check("concurrency Release", err)
	_, err = c.Peek(ctx, "k")
	check("concurrency Peek", err)
	check("concurrency Reset", c.Reset(ctx, "k"))
	if c.Algorithm() != "" || c.Store() != nil || c.Limit() != 0 {
		t.Errorf("a zero concurrency.Limiter describes itself as %q on %v, Limit %d", c.Algorithm(), c.Store(), c.Limit())
	}
}

// Every constructor that takes a limiter refuses one that cannot decide
// (MaxCost() < 1: nil, zero, or a wrapper of one), rather than failing (or
// failing open) at every call: any wrapper over any such limiter.
func TestConstructorsRefuseZeroLimiters(t *testing.T) {
	var nilLimiter *ratekit.Limiter
	cannot := map[string]core.Limiter{
		"nil":                     nil,
		"a zero *ratekit.Limiter": &ratekit.Limiter{},
		"a nil *ratekit.Limiter":  nilLimiter,
		"a zero failsafe":         &failsafe.Limiter{},
		"a zero denycache":        &denycache.Limiter{},
		"a zero hotkey.Budget":    &hotkey.Budget{},
	}
	good := bucket(t, newStore(t), "good:", 5)
	constructors := map[string]func(l core.Limiter) error{
		"failsafe Limiter": func(l core.Limiter) error { _, err := failsafe.New(failsafe.Config{Limiter: l}); return err },
		"failsafe Local": func(l core.Limiter) error {
			_, err := failsafe.New(failsafe.Config{Limiter: good, Mode: failsafe.FailLocal, Local: l})
			return err
		},
		"denycache": func(l core.Limiter) error { _, err := denycache.New(l); return err },
		"hotkey": func(l core.Limiter) error {
			_, err := hotkey.New(l, hotkey.Config{Lease: 1, TTL: time.Second})
			return err
		},
		"httplimit": func(l core.Limiter) error { _, err := httplimit.New(httplimit.Config{Limiter: l}); return err },
	}
	for cname, build := range constructors {
		for lname, l := range cannot {
			if err := build(l); !errors.Is(err, core.ErrInvalidConfig) {
				t.Errorf("%s over %s: %v, want ErrInvalidConfig", cname, lname, err)
			}
		}
		if err := build(good); err != nil {
			t.Errorf("%s over a limiter that decides: %v", cname, err)
		}
	}
	if _, err := httplimit.Concurrency(httplimit.ConcurrencyConfig{Limiter: &concurrency.Limiter{}}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("httplimit.Concurrency of a zero concurrency.Limiter: %v", err)
	}
}

// A clock that reads a time ratekit cannot compute with is refused by the
// constructor it is given to, with an error wrapping core.ErrInvalidConfig
// (and core.ErrInvalidTime), not met with a panic at the first call: a nil
// *fakeclock.Clock reads the zero time. So for every constructor that
// takes a clock.
func TestConstructorsRefuseBadClocks(t *testing.T) {
	good := bucket(t, newStore(t), "good:", 5)
	var nilClock *fakeclock.Clock
	for cname, c := range map[string]core.Clock{
		"a nil *fakeclock.Clock": nilClock,
		"a nil core.ClockFunc":   core.ClockFunc(nil),
		"a clock after 2112":     fakeclock.New(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)),
	} {
		for name, err := range map[string]error{
			"tokenbucket Config.Clock": func() error {
				_, err := tokenbucket.New(newStore(t), tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second, Clock: c})
				return err
			}(),
			"memory.WithClock":    func() error { _, err := memory.New(memory.WithClock(c)); return err }(),
			"failsafe Clock":      func() error { _, err := failsafe.New(failsafe.Config{Limiter: good, Clock: c}); return err }(),
			"denycache.WithClock": func() error { _, err := denycache.New(good, denycache.WithClock(c)); return err }(),
			"hotkey Clock": func() error {
				_, err := hotkey.New(good, hotkey.Config{Lease: 1, TTL: time.Second, Clock: c})
				return err
			}(),
		} {
			if !errors.Is(err, core.ErrInvalidConfig) || !errors.Is(err, core.ErrInvalidTime) {
				t.Errorf("%s with %s: %v, want ErrInvalidConfig and ErrInvalidTime", name, cname, err)
			}
		}
	}
}

// The wrappers too: a failsafe.Limiter, denycache.Limiter or
// hotkey.Budget declared but never built by its New, or a nil pointer to
// one, fails every call with an error wrapping core.ErrInvalidConfig and
// describes itself as empty (MaxCost 0); so does a nil
// *concurrency.Limiter.
func TestZeroWrappers(t *testing.T) {
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "zero") {
			t.Errorf("%s: %v, want an ErrInvalidConfig naming a zero limiter", what, err)
		}
	}
	var nilFailsafe *failsafe.Limiter
	for name, f := range map[string]*failsafe.Limiter{"zero": {}, "nil": nilFailsafe} {
		_, err := f.Allow(ctx, "k")
		check("failsafe Allow, "+name, err)
		_, err = f.AllowN(ctx, "k", 1)
		check("failsafe AllowN, "+name, err)
		_, err = f.Peek(ctx, "k")
		check("failsafe Peek, "+name, err)
		_, err = f.Refund(ctx, "k", 1)
		check("failsafe Refund, "+name, err)
		check("failsafe Reset, "+name, f.Reset(ctx, "k"))
		if f.Down() || f.State() != failsafe.Up || f.Unwrap() != nil || f.MaxCost() != 0 {
			t.Errorf("failsafe, %s: Down %v, State %v, Unwrap %v", name, f.Down(), f.State(), f.Unwrap())
		}
	}
	var nilDeny *denycache.Limiter
	for name, d := range map[string]*denycache.Limiter{"zero": {}, "nil": nilDeny} {
		_, err := d.Allow(ctx, "k")
		check("denycache Allow, "+name, err)
		_, err = d.AllowN(ctx, "k", 1)
		check("denycache AllowN, "+name, err)
		_, err = d.Peek(ctx, "k")
		check("denycache Peek, "+name, err)
		_, err = d.Refund(ctx, "k", 1)
		check("denycache Refund, "+name, err)
		check("denycache Reset, "+name, d.Reset(ctx, "k"))
		d.Forget("k")
		if d.Hits() != 0 || d.Unwrap() != nil || d.MaxCost() != 0 {
			t.Errorf("denycache, %s: Hits %d, Unwrap %v", name, d.Hits(), d.Unwrap())
		}
	}
	var nilBudget *hotkey.Budget
	for name, b := range map[string]*hotkey.Budget{"zero": {}, "nil": nilBudget} {
		_, err := b.Allow(ctx, "k")
		check("hotkey Allow, "+name, err)
		_, err = b.AllowN(ctx, "k", 1)
		check("hotkey AllowN, "+name, err)
		_, err = b.Peek(ctx, "k")
		check("hotkey Peek, "+name, err)
		_, err = b.Refund(ctx, "k", 1)
		check("hotkey Refund, "+name, err)
		check("hotkey Reset, "+name, b.Reset(ctx, "k"))
		check("hotkey Close, "+name, b.Close(ctx))
		if b.Stats() != (hotkey.Stats{}) || b.Unwrap() != nil || b.MaxCost() != 0 {
			t.Errorf("hotkey, %s: Stats %+v, Unwrap %v", name, b.Stats(), b.Unwrap())
		}
	}
	var c *concurrency.Limiter
	_, _, err := c.Acquire(ctx, "k")
	check("Acquire on a nil *concurrency.Limiter", err)
	_, err = c.Extend(ctx, concurrency.Lease{Key: "k", N: 1, ID: "0123456789abcdef0123456789abcdef"})
	check("Extend on a nil *concurrency.Limiter", err)
	_, err = c.Peek(ctx, "k")
	check("Peek on a nil *concurrency.Limiter", err)
	check("Reset on a nil *concurrency.Limiter", c.Reset(ctx, "k"))
	if c.Algorithm() != "" || c.Store() != nil || c.Limit() != 0 || c.TTL() != 0 {
		t.Errorf("a nil *concurrency.Limiter describes itself as %q on %v, Limit %d, TTL %v", c.Algorithm(), c.Store(), c.Limit(), c.TTL())
	}
}

// A zero or nil Tiers holds no tier: Policy fails with ErrInvalidConfig,
// Names is empty.
func TestZeroTiers(t *testing.T) {
	var nilTiers *ratekit.Tiers
	for name, ts := range map[string]*ratekit.Tiers{"zero": {}, "nil": nilTiers} {
		if p, err := ts.Policy("free"); p != nil || !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s Tiers: Policy: %v, %v; want ErrInvalidConfig", name, p, err)
		}
		if n := ts.Names(); len(n) != 0 {
			t.Errorf("%s Tiers: Names %v", name, n)
		}
	}
}
