package conformance

import (
	"context"
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
)

// base returns the ratekit.Limiter behind an algorithm's limiter.
func base(t *rapid.T, l core.Limiter) *ratekit.Limiter {
	switch l := l.(type) {
	case *ratekit.Limiter:
		return l
	case *gcra.Limiter:
		return l.Limiter
	}
	t.Fatalf("%T is not a ratekit limiter", l)
	return nil
}

// runMulti drives a ratekit.Multi of one to four limits of random
// algorithms on the store under test and on the reference: the same
// decisions on both, nothing counted anywhere when any limit denies, and
// every limit's bound on what all of them allowed.
func runMulti(t *rapid.T, h Harness) {
	size := rapid.IntRange(1, 4).Draw(t, "limits")
	vs := make([]variant, size)
	for i := range vs {
		vs[i] = rapid.SampledFrom(drawable).Draw(t, "algorithm").draw(t, nil)
	}
	clock, ref, limClock := reference(t, h)
	defer ref.Close()
	prefix := newPrefix()
	build := func(r core.ScriptRunner) (*ratekit.Multi, []*ratekit.Limiter) {
		ls := make([]*ratekit.Limiter, size)
		for i, v := range vs {
			l, err := v.build(r, fmt.Sprintf("%s%d", prefix, i), limClock)
			if err != nil {
				t.Fatalf("%s: %v", v.desc, err)
			}
			ls[i] = base(t, l)
		}
		m, err := ratekit.NewMulti(ls...)
		if err != nil {
			t.Fatalf("NewMulti: %v", err)
		}
		return m, ls
	}
	want, wantLs := build(ref)
	got, gotLs := build(h.Runner)
	var maxCost int64 = 1 << 62
	for _, v := range vs {
		t.Logf("limit: %s", v.desc)
		maxCost = min(maxCost, v.maxCost)
	}

	ctx := context.Background()
	// Each limit's history and time, per key (see runMachine).
	history := make([]map[string][]event, size)
	high := make([]map[string]int64, size)
	for i := range history {
		history[i], high[i] = map[string][]event{}, map[string]int64{}
	}
	keyGen := rapid.SampledFrom(keys)
	now := func() int64 { return clock.Now().UnixMicro() }
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}
	compareAll := func(t *rapid.T, what string, dw []core.Decision, ew error, dg []core.Decision, eg error) {
		if ew != nil || eg != nil {
			if kind(ew) == nil || kind(ew) != kind(eg) {
				t.Fatalf("%s: reference error %v, store error %v", what, ew, eg)
			}
			return
		}
		if len(dw) != size || len(dg) != size {
			t.Fatalf("%s: %d and %d decisions for %d limits", what, len(dw), len(dg), size)
		}
		for i := range dw {
			if dw[i] != dg[i] {
				t.Fatalf("%s, limit %d (%s):\n  reference %+v\n  store     %+v", what, i, vs[i].desc, dw[i], dg[i])
			}
		}
	}
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			p := int64(vs[0].period / time.Microsecond)
			clock.Advance(time.Duration(rapid.Int64Range(0, 2*p).Draw(t, "step")) * time.Microsecond)
		},
		"allow": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.OneOf(rapid.Just(int64(1)), rapid.Int64Range(1, maxCost), rapid.Int64Range(0, maxCost+1)).Draw(t, "n")
			sync()
			what := fmt.Sprintf("Multi.AllowN(%q, %d) at %d", key, n, now())
			before, _ := want.Peek(ctx, key)
			dw, ew := want.AllowN(ctx, key, n)
			dg, eg := got.AllowN(ctx, key, n)
			compareAll(t, what, dw, ew, dg, eg)
			if ew != nil {
				return
			}
			if !ratekit.Allowed(dw) {
				// Denied by one: counted by none.
				after, err := want.Peek(ctx, key)
				if err != nil || len(after) != len(before) {
					t.Fatalf("%s: Peek after a denial: %v", what, err)
				}
				for i := range after {
					if after[i] != before[i] {
						t.Fatalf("%s: denied, but limit %d (%s) changed: %+v before, %+v after", what, i, vs[i].desc, before[i], after[i])
					}
				}
				return
			}
			for i, v := range vs {
				at := max(now(), high[i][key])
				high[i][key] = at
				history[i][key] = append(history[i][key], event{at: at, cost: n})
				if err := v.bound(history[i][key]); err != nil {
					t.Fatalf("%s: limit %d (%s), key %q: bound violated: %v", what, i, v.desc, key, err)
				}
			}
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			dw, ew := want.Peek(ctx, key)
			dg, eg := got.Peek(ctx, key)
			compareAll(t, fmt.Sprintf("Multi.Peek(%q) at %d", key, now()), dw, ew, dg, eg)
		},
		// One limit decides alone, as another route of the application
		// would: the multi-limit decisions must follow its state.
		"single": func(t *rapid.T) {
			i := rapid.IntRange(0, size-1).Draw(t, "limit")
			key := keyGen.Draw(t, "key")
			sync()
			dw, ew := wantLs[i].AllowN(ctx, key, 1)
			dg, eg := gotLs[i].AllowN(ctx, key, 1)
			compare(t, fmt.Sprintf("limit %d alone: AllowN(%q, 1) at %d", i, key, now()), dw, ew, dg, eg)
			if ew == nil && dw.Allowed {
				at := max(now(), high[i][key])
				high[i][key] = at
				history[i][key] = append(history[i][key], event{at: at, cost: 1})
				if err := vs[i].bound(history[i][key]); err != nil {
					t.Fatalf("limit %d (%s), key %q: bound violated: %v", i, vs[i].desc, key, err)
				}
			}
		},
		"reset": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			for i := range vs {
				ew := wantLs[i].Reset(ctx, key)
				eg := gotLs[i].Reset(ctx, key)
				compare(t, fmt.Sprintf("limit %d: Reset(%q)", i, key), core.Decision{}, ew, core.Decision{}, eg)
				delete(history[i], key)
				delete(high[i], key)
			}
		},
	}
	if h.SetTime == nil || !h.ForwardOnlyTTL {
		actions["back"] = func(t *rapid.T) {
			p := int64(vs[0].period / time.Microsecond)
			clock.Advance(-time.Duration(rapid.Int64Range(1, 2*p).Draw(t, "back")) * time.Microsecond)
		}
	}
	t.Repeat(actions)
}
