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
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/httplimit"
)

// A limiter declared but never built by its New fails every call with an
// error wrapping core.ErrInvalidConfig, and describes itself as empty:
// it never panics.
func TestZeroLimiters(t *testing.T) {
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", what, err)
		}
	}
	var l ratekit.Limiter
	_, err := l.Allow(ctx, "k")
	check("Allow", err)
	_, err = l.AllowN(ctx, "k", 1)
	check("AllowN", err)
	_, err = l.Peek(ctx, "k")
	check("Peek", err)
	_, err = l.Refund(ctx, "k", 1)
	check("Refund", err)
	check("Reset", l.Reset(ctx, "k"))
	_, err = l.Call("k", 1)
	check("Call", err)
	for _, r := range l.AllowMany(ctx, []core.Request{{Key: "k", N: 1}, {Key: "j", N: 1}}) {
		check("AllowMany", r.Err)
	}
	if l.Algorithm() != "" || l.Store() != nil || l.MaxCost() != 0 {
		t.Errorf("a zero Limiter describes itself as %q on %v, MaxCost %d", l.Algorithm(), l.Store(), l.MaxCost())
	}
	if c := ratekit.Coalesce(&l); c != &l {
		t.Error("Coalesce of a zero Limiter made another")
	}
	_, err = ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: &l}}})
	check("NewPolicy of a zero Limiter", err)

	var p ratekit.Policy
	_, err = p.Allow(ctx, "k")
	check("Policy.Allow", err)
	_, err = p.Peek(ctx, "k")
	check("Policy.Peek", err)
	_, err = p.Refund(ctx, "k", 1)
	check("Policy.Refund", err)
	check("Policy.Reset", p.Reset(ctx, "k"))
	if len(p.Limits()) != 0 || p.MaxCost() != 0 {
		t.Errorf("a zero Policy has %d limits, MaxCost %d", len(p.Limits()), p.MaxCost())
	}

	// A nil *Limiter too, and a zero gcra.Limiter, which embeds one.
	var nilLimiter *ratekit.Limiter
	_, err = nilLimiter.Allow(ctx, "k")
	check("Allow on a nil *Limiter", err)
	var g gcra.Limiter
	_, err = g.Allow(ctx, "k")
	check("gcra Allow", err)
	_, _, err = g.AllowAtMost(ctx, "k", 1)
	check("gcra AllowAtMost", err)
	var nilGCRA *gcra.Limiter
	_, _, err = nilGCRA.AllowAtMost(ctx, "k", 1)
	check("gcra AllowAtMost on a nil *gcra.Limiter", err)
	if g.Algorithm() != "" || g.Store() != nil {
		t.Errorf("a zero gcra.Limiter describes itself as %q on %v", g.Algorithm(), g.Store())
	}

	// A zero Multi, and a nil *Policy.
	var m ratekit.Multi
	_, err = m.AllowN(ctx, "k", 1)
	check("Multi.AllowN", err)
	_, err = m.Peek(ctx, "k")
	check("Multi.Peek", err)
	var nilPolicy *ratekit.Policy
	_, err = nilPolicy.Allow(ctx, "k")
	check("Allow on a nil *Policy", err)
	check("Reset on a nil *Policy", nilPolicy.Reset(ctx, "k"))
	if nilPolicy.Limits() != nil || nilPolicy.MaxCost() != 0 {
		t.Error("a nil *Policy describes limits")
	}

	var c concurrency.Limiter
	_, _, err = c.Acquire(ctx, "k")
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

// Every constructor that takes a limiter refuses a zero one, as it
// refuses a nil one, rather than failing (or failing open) at every call.
func TestConstructorsRefuseZeroLimiters(t *testing.T) {
	ctx := context.Background()
	zero, zeroPolicy, zeroConcurrency := &ratekit.Limiter{}, &ratekit.Policy{}, &concurrency.Limiter{}
	for name, err := range map[string]error{
		"failsafe Store": func() error { _, err := failsafe.New(failsafe.Config{Limiter: zero}); return err }(),
		"failsafe Local": func() error {
			_, err := failsafe.New(failsafe.Config{Limiter: &gcra.Limiter{Limiter: zero}, Policy: failsafe.FailLocal, Local: zero})
			return err
		}(),
		"denycache": func() error { _, err := denycache.New(zero).Allow(ctx, "k"); return err }(),
		"hotkey":    func() error { _, err := hotkey.New(zero, hotkey.Config{Lease: 1, TTL: time.Second}); return err }(),
		"httplimit Policies": func() error {
			_, err := httplimit.New(httplimit.Config{Policies: []httplimit.Policy{{Name: "api", Limiter: zero}}})
			return err
		}(),
		"httplimit Policy": func() error { _, err := httplimit.New(httplimit.Config{Policy: zeroPolicy}); return err }(),
		"httplimit Concurrency": func() error {
			_, err := httplimit.Concurrency(httplimit.ConcurrencyConfig{Limiter: zeroConcurrency})
			return err
		}(),
	} {
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "zero") {
			t.Errorf("%s: %v, want an ErrInvalidConfig naming a zero limiter", name, err)
		}
	}
	// A wrapper around nothing is refused as well: every call on it fails.
	_, err := failsafe.New(failsafe.Config{Limiter: denycache.New(nil)})
	if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "around a limiter that is nil") {
		t.Errorf("failsafe over a deny cache of nothing: %v", err)
	}
	// And a nil *Multi fails as a zero one.
	var m *ratekit.Multi
	if _, err := m.AllowN(ctx, "k", 1); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("AllowN on a nil *Multi: %v", err)
	}
}

// The wrappers too: a failsafe.Limiter, denycache.Limiter or
// hotkey.Budget declared but never built by its New, or a nil pointer to
// one, fails every call with an error wrapping core.ErrInvalidConfig and
// describes itself as empty; so does a nil *concurrency.Limiter.
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
		check("failsafe Reset, "+name, f.Reset(ctx, "k"))
		if f.Down() || f.State() != failsafe.Up || f.Unwrap() != nil {
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
		check("denycache Reset, "+name, d.Reset(ctx, "k"))
		d.Forget("k")
		if d.Hits() != 0 || d.Unwrap() != nil {
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
		check("hotkey Reset, "+name, b.Reset(ctx, "k"))
		check("hotkey Close, "+name, b.Close(ctx))
		if b.Stats() != (hotkey.Stats{}) || b.Unwrap() != nil {
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
