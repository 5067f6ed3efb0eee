package callcheck_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/store/memory"
)

// wrap is a limiter around another, as failsafe and denycache are.
type wrap struct{ core.Limiter }

func (w wrap) Unwrap() core.Limiter { return w.Limiter }

// loop unwraps to itself.
type loop struct{ core.Limiter }

func (l *loop) Unwrap() core.Limiter { return l }

// tokenBucket7 returns a token bucket of capacity 7 on a memory store.
func tokenBucket7(t *testing.T) *tokenbucket.Limiter {
	t.Helper()
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tb, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 7, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestMaxCost(t *testing.T) {
	tb := tokenBucket7(t)
	var nilLimiter *ratekit.Limiter
	for name, c := range map[string]struct {
		l    core.Limiter
		want int64
	}{
		"a limiter":               {tb, 7},
		"wrapped twice":           {wrap{wrap{tb}}, 7},
		"a limiter that says not": {wrap{nil}, math.MaxInt64},
		"a typed nil":             {nilLimiter, math.MaxInt64},
		"wrapping a typed nil":    {wrap{nilLimiter}, math.MaxInt64},
		"a loop":                  {&loop{}, math.MaxInt64},
	} {
		if got := callcheck.MaxCost(c.l); got != c.want {
			t.Errorf("%s: MaxCost = %d, want %d", name, got, c.want)
		}
	}
}

// Check refuses what the limiter refuses, with the same errors.
func TestCheckAgreesWithTheLimiter(t *testing.T) {
	tb := tokenBucket7(t)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	for _, c := range []struct {
		ctx  context.Context
		key  string
		n    int64
		want error
	}{
		{ctx, "k", 1, nil},
		{ctx, "k", 7, nil},
		{ctx, "", 1, core.ErrInvalidKey},
		{ctx, strings.Repeat("k", core.MaxKeyLen+1), 1, core.ErrInvalidKey},
		{ctx, "k", 0, core.ErrInvalidCost},
		{ctx, "k", -1, core.ErrInvalidCost},
		{ctx, "k", 8, core.ErrInvalidCost},
		{ended, "k", 1, context.Canceled},
		{ended, "", 0, core.ErrInvalidKey}, // the key first, as the limiter
	} {
		got := callcheck.Check(c.ctx, c.key, c.n, callcheck.MaxCost(tb))
		_, lim := tb.AllowN(c.ctx, c.key, c.n)
		if !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("Check(%.10q, %d) = %v, want %v", c.key, c.n, got, c.want)
		}
		if (got == nil) != (lim == nil) || (got != nil && got.Error() != lim.Error()) {
			t.Errorf("Check(%.10q, %d) = %v, the limiter says %v", c.key, c.n, got, lim)
		}
	}
}

func TestUnusable(t *testing.T) {
	tb := tokenBucket7(t)
	var nilLimiter *ratekit.Limiter
	for name, c := range map[string]struct {
		l    any
		want string
	}{
		"a limiter":               {tb, ""},
		"a limiter of no ratekit": {plain{}, ""},
		"nil":                     {nil, "nil"},
		"a typed nil":             {nilLimiter, "a nil *ratekit.Limiter"},
		"a zero limiter":          {&ratekit.Limiter{}, "a zero *ratekit.Limiter, not built by its New"},
		"a zero policy":           {&ratekit.Policy{}, "a zero *ratekit.Policy, not built by its New"},
		"wrapping a zero limiter": {wrap{&ratekit.Limiter{}}, "a callcheck_test.wrap around a limiter that is nil or was never built by its New"},
		"wrapping nil":            {wrap{nil}, "a callcheck_test.wrap around a limiter that is nil or was never built by its New"},
	} {
		if got := callcheck.Unusable(c.l); got != c.want {
			t.Errorf("%s: Unusable = %q, want %q", name, got, c.want)
		}
	}
}

// plain is a limiter that is not ratekit's and wraps none.
type plain struct{ core.Limiter }
