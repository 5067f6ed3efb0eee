package callcheck_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/store/memory"
)

// tokenBucket7 returns a token bucket of capacity 7 on a memory store.
func tokenBucket7(t *testing.T) *ratekit.Limiter {
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

// Request refuses what the limiter refuses, with the same errors.
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
		got := callcheck.Request(c.ctx, core.Request{Key: c.key, N: c.n}, tb.MaxCost())
		_, lim := tb.AllowN(c.ctx, c.key, c.n)
		if !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("Request(%.10q, %d) = %v, want %v", c.key, c.n, got, c.want)
		}
		if (got == nil) != (lim == nil) || (got != nil && got.Error() != lim.Error()) {
			t.Errorf("Request(%.10q, %d) = %v, the limiter says %v", c.key, c.n, got, lim)
		}
	}
}

// Request checks a request's Op and Params as the limiter does.
func TestRequestAgreesWithTheLimiter(t *testing.T) {
	tb := tokenBucket7(t)
	ctx := context.Background()
	p3, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    core.Request
		want error
	}{
		{core.Request{Key: "k", N: 3, Params: []core.Params{p3}}, nil},
		{core.Request{Key: "k", N: 4, Params: []core.Params{p3}}, core.ErrInvalidCost},
		{core.Request{Key: "k", N: 1, Op: 9}, core.ErrInvalidConfig},
		{core.Request{Key: "", N: 1, Op: 9}, core.ErrInvalidConfig}, // the Op first
		{core.Request{Key: "", N: 1, Params: []core.Params{p3}}, core.ErrInvalidKey},
		{core.Request{Key: "k", N: 1, Op: core.OpRefund, Params: []core.Params{p3}}, nil},
	} {
		got := callcheck.Request(ctx, c.r, tb.MaxCost())
		_, lim := tb.Decide(ctx, c.r)
		if !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("Request(%+v) = %v, want %v", c.r, got, c.want)
		}
		if (got == nil) != (lim == nil) || (got != nil && got.Error() != lim.Error()) {
			t.Errorf("Request(%+v) = %v, the limiter says %v", c.r, got, lim)
		}
	}
}
