package otelratekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// A Telemetry, Limiter, Concurrency or Store declared but never built (a
// zero value or a nil pointer) fails every call with an error wrapping
// core.ErrInvalidConfig and describes itself as empty: it never panics. A
// Limiter's MaxCost and a Concurrency's Limit are 0, so that wrappers
// refuse them; a Store's calls wrap core.ErrStore too, and its name is
// "", so no limiter is built on it.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", what, err)
		}
	}
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}

	var nilTel *otelratekit.Telemetry
	for name, tel := range map[string]*otelratekit.Telemetry{"zero": {}, "nil": nilTel} {
		_, err := tel.Limiter("api", lim)
		check("Telemetry.Limiter, "+name, err)
		_, err = tel.Store(s)
		check("Telemetry.Store, "+name, err)
		_, err = tel.Concurrency("api", &concurrency.Limiter{})
		check("Telemetry.Concurrency, "+name, err)
	}

	var nilLimiter *otelratekit.Limiter
	for name, l := range map[string]*otelratekit.Limiter{"zero": {}, "nil": nilLimiter} {
		_, err := l.Allow(ctx, "k")
		check("Limiter.Allow, "+name, err)
		_, err = l.Peek(ctx, "k")
		check("Limiter.Peek, "+name, err)
		_, err = l.Refund(ctx, "k", 1)
		check("Limiter.Refund, "+name, err)
		check("Limiter.Reset, "+name, l.Reset(ctx, "k"))
		for _, r := range l.AllowMany(ctx, []core.Request{{Key: "k", N: 1}}) {
			check("Limiter.AllowMany, "+name, r.Err)
		}
		_, err = core.Wait(ctx, l, "k", 1)
		check("core.Wait on a Limiter, "+name, err)
		if l.Name() != "" || l.Algorithm() != "" || l.StoreName() != "" || l.Unwrap() != nil || l.Close() != nil || l.MaxCost() != 0 {
			t.Errorf("Limiter, %s, describes itself", name)
		}
	}

	var nilConc *otelratekit.Concurrency
	for name, c := range map[string]*otelratekit.Concurrency{"zero": {}, "nil": nilConc} {
		_, _, err := c.Acquire(ctx, "k")
		check("Concurrency.Acquire, "+name, err)
		lease := concurrency.Lease{Key: "k", N: 1, ID: "0123456789abcdef0123456789abcdef"}
		_, err = c.Release(ctx, lease)
		check("Concurrency.Release, "+name, err)
		_, err = c.Extend(ctx, lease)
		check("Concurrency.Extend, "+name, err)
		_, err = c.Peek(ctx, "k")
		check("Concurrency.Peek, "+name, err)
		check("Concurrency.Reset, "+name, c.Reset(ctx, "k"))
		if c.Name() != "" || c.Algorithm() != "" || c.StoreName() != "" || c.Unwrap() != nil || c.Limit() != 0 || c.TTL() != 0 {
			t.Errorf("Concurrency, %s, describes itself", name)
		}
	}

	var nilStore *otelratekit.Store
	script := core.NewScript("zero-echo", `return {1}`, func(core.Tx, []string, []int64, []int64) ([]int64, error) { return []int64{1}, nil }, false)
	for name, st := range map[string]*otelratekit.Store{"zero": {}, "nil": nilStore} {
		_, err := st.RunScript(ctx, script, []string{"k"}, nil, nil)
		if !errors.Is(err, core.ErrStore) {
			t.Errorf("Store.RunScript, %s: %v, want ErrStore", name, err)
		}
		check("Store.RunScript, "+name, err)
		for _, r := range st.RunScripts(ctx, []core.ScriptCall{{Script: script, Keys: []string{"k"}}}) {
			check("Store.RunScripts, "+name, r.Err)
		}
		_, err = tokenbucket.New(st, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second})
		check("tokenbucket.New on a Store, "+name, err)
		if st.StoreName() != "" || st.Unwrap() != nil || st.SingleNode() {
			t.Errorf("Store, %s, describes itself", name)
		}
	}
}

// A Telemetry refuses to wrap a wrapper around nothing (its MaxCost is
// 0), as failsafe and denycache refuse it.
func TestLimiterRefusesAWrapperOfNothing(t *testing.T) {
	tel, err := otelratekit.New(otelratekit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]core.Limiter{
		"zero deny cache":          &denycache.Limiter{},
		"zero failsafe limiter":    &failsafe.Limiter{},
		"zero otelratekit limiter": &otelratekit.Limiter{},
	} {
		if _, err := tel.Limiter("api", l); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}
