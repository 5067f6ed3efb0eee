package conformance

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// A policyLimit is one drawn limit of a policy: its algorithm, one
// configuration per tier, and how it enforces.
type policyLimit struct {
	name    string
	tiers   [2]variant
	shadow  bool
	penalty time.Duration
}

// runPolicy drives random policies of one to four limits of random
// algorithms, in two tiers of one shape, on the store under test and on
// the reference: the same decisions on both, one by one, through a
// coalescing limiter and in batches (AllowMany); nothing counted anywhere
// when the policy denies; a penalty blocks exactly when an enforced limit
// with one denies, for its time; shadow limits never deny; a decision's
// own fields are its binding limit's (core.Decision); refunds; keys
// moving between tiers; and every limit's bound on what it counted.
func runPolicy(t *rapid.T, h Harness) {
	size := rapid.IntRange(1, 4).Draw(t, "limits")
	shadowAll := rapid.IntRange(0, 9).Draw(t, "shadow policy") == 0
	limits := make([]policyLimit, size)
	for i := range limits {
		a := rapid.SampledFrom(drawable).Draw(t, "algorithm")
		l := &limits[i]
		l.name = fmt.Sprintf("%s-%d", a.name, i)
		l.tiers = [2]variant{a.draw(t, nil), a.draw(t, nil)}
		l.shadow = shadowAll || rapid.IntRange(0, 3).Draw(t, "shadow") == 0
		if rapid.Bool().Draw(t, "penalty") {
			l.penalty = time.Duration(rapid.Int64Range(1, 3*int64(l.tiers[0].period/time.Microsecond)).Draw(t, "penalty µs")) * time.Microsecond
		}
		t.Logf("limit %s: tiers %s | %s; shadow %v, penalty %v", l.name, l.tiers[0].desc, l.tiers[1].desc, l.shadow, l.penalty)
	}
	clock, ref, limClock := reference(t, h)
	defer ref.Close()
	prefix := newPrefix()
	build := func(r core.ScriptRunner, tier int) (*ratekit.Limiter, []*ratekit.Limiter) {
		ls := make([]*ratekit.Limiter, size)
		cfg := ratekit.PolicyConfig{Shadow: shadowAll, PenaltyPrefix: prefix + "penalty:"}
		for i, l := range limits {
			lim, err := l.tiers[tier].build(r, fmt.Sprintf("%s%d", prefix, i), limClock)
			if err != nil {
				t.Fatalf("%s: %v", l.tiers[tier].desc, err)
			}
			ls[i] = lim
			cfg.Limits = append(cfg.Limits, ratekit.Limit{Name: l.name, Limiter: ls[i], Shadow: l.shadow, Penalty: l.penalty})
		}
		p, err := ratekit.NewPolicy(cfg)
		if err != nil {
			t.Fatalf("NewPolicy: %v", err)
		}
		return p, ls
	}
	// gotC[tier] is got[tier] coalescing (ratekit.Coalesce).
	var want, got, gotC [2]*ratekit.Limiter
	var wantLs, gotLs [2][]*ratekit.Limiter
	for tier := range 2 {
		want[tier], wantLs[tier] = build(ref, tier)
		got[tier], gotLs[tier] = build(h.Runner, tier)
		gotC[tier] = coalesced(t, got[tier])
	}
	if _, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"0": want[0], "1": want[1]}); err != nil {
		t.Fatalf("NewTiers: %v", err)
	}
	maxCost := want[0].MaxCost()
	if c := want[1].MaxCost(); c < maxCost {
		maxCost = c
	}

	ctx := context.Background()
	tierOf := map[string]int{}
	// Per limit and key, as in runMachine: the requests the limit counted
	// since its bounds last applied, the key's time, and the time until
	// which state from another tier or a refund may shape decisions.
	history := make([]map[string][]engine.Event, size)
	high := make([]map[string]int64, size)
	tainted := make([]map[string]int64, size)
	for i := range history {
		history[i], high[i], tainted[i] = map[string][]engine.Event{}, map[string]int64{}, map[string]int64{}
	}
	wait := func(i int) int64 {
		return int64(max(limits[i].tiers[0].wait, limits[i].tiers[1].wait) / time.Microsecond)
	}
	taint := func(key string) {
		for i := range limits {
			high[i][key] = max(high[i][key], now(clock))
			tainted[i][key] = max(tainted[i][key], high[i][key]+wait(i))
			delete(history[i], key)
		}
	}
	// blocked is the model of the penalty blocks: the time each key's
	// block ends.
	blocked := map[string]int64{}
	keyGen := rapid.SampledFrom(keys)
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}
	compareAll := func(t *rapid.T, what string, dw core.Decision, ew error, dg core.Decision, eg error) {
		if ew != nil || eg != nil {
			if kind(ew) == nil || kind(ew) != kind(eg) {
				t.Fatalf("%s: reference error %v, store error %v", what, ew, eg)
			}
			return
		}
		if len(dw.Limits) != size {
			t.Fatalf("%s: %d decisions for %d limits", what, len(dw.Limits), size)
		}
		if !reflect.DeepEqual(dw, dg) {
			t.Fatalf("%s:\n  reference %+v\n  store     %+v", what, dw, dg)
		}
	}
	// check holds a decision to the policy's rules, given whether the key
	// was blocked before it.
	check := func(t *rapid.T, what, key string, d core.Decision, wasBlocked bool, mode string) {
		denied := 0
		var penalty time.Duration
		var retry time.Duration
		for i, ld := range d.Limits {
			l := limits[i]
			if ld.Name != l.name || ld.Shadow != l.shadow {
				t.Fatalf("%s: limit %d reported as %q (shadow %v)", what, i, ld.Name, ld.Shadow)
			}
			if ld.Limits != nil || ld.Blocked {
				t.Fatalf("%s: limit %s's decision has Limits %v, Blocked %v", what, l.name, ld.Limits, ld.Blocked)
			}
			if ld.Allowed || l.shadow {
				continue
			}
			denied++
			penalty = max(penalty, l.penalty)
			retry = max(retry, ld.RetryAfter)
		}
		if shadowAll && !wasBlocked && !d.Allowed {
			t.Fatalf("%s: a shadow policy denied: %+v", what, d)
		}
		nowBlocked := wasBlocked
		if mode == "allow" && !wasBlocked && penalty > 0 {
			blocked[key] = now(clock) + int64(penalty/time.Microsecond)
			nowBlocked = true
		}
		if d.Blocked != nowBlocked {
			t.Fatalf("%s: Blocked %v, want %v (block until %d)", what, d.Blocked, nowBlocked, blocked[key])
		}
		if d.Allowed != (!nowBlocked && denied == 0) {
			t.Fatalf("%s: Allowed %v with %d enforced limits denying, blocked %v", what, d.Allowed, denied, nowBlocked)
		}
		if nowBlocked {
			retry = max(retry, time.Duration(blocked[key]-now(clock))*time.Microsecond)
		}
		if !d.Allowed && d.RetryAfter != retry || d.Allowed && d.RetryAfter != 0 {
			t.Fatalf("%s: RetryAfter %v, want %v", what, d.RetryAfter, retry)
		}
		checkBinding(t, what, d, denied > 0)
	}
	peekLimits := func(t *rapid.T, p *ratekit.Limiter, key string) []core.LimitDecision {
		d, err := p.Peek(ctx, key)
		if err != nil {
			t.Fatalf("Peek(%q): %v", key, err)
		}
		return d.Limits
	}
	// counted checks an AllowN decision d of cost n on key, in tier, and
	// records what each limit counted: every limit that allowed, when the
	// policy allowed.
	counted := func(t *rapid.T, what, key string, n int64, tier int, d core.Decision, wasBlocked bool) {
		check(t, what, key, d, wasBlocked, "allow")
		if !d.Allowed {
			return
		}
		for i, ld := range d.Limits {
			if !ld.Allowed {
				continue // a shadow limit that would have denied counts nothing
			}
			v := limits[i].tiers[tier]
			at := max(now(clock), high[i][key])
			high[i][key] = at
			if at < tainted[i][key] {
				tainted[i][key] = max(tainted[i][key], at+wait(i))
				continue
			}
			history[i][key] = append(history[i][key], engine.Event{At: at, Cost: n})
			if err := v.bound(history[i][key]); err != nil {
				t.Fatalf("%s: limit %s (%s), key %q: bound violated: %v", what, limits[i].name, v.desc, key, err)
			}
		}
	}
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			p := int64(limits[0].tiers[0].period / time.Microsecond)
			clock.Advance(time.Duration(rapid.Int64Range(0, 2*p).Draw(t, "step")) * time.Microsecond)
		},
		"allow": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.OneOf(rapid.Just(int64(1)), rapid.Int64Range(1, maxCost), rapid.Int64Range(0, maxCost+1)).Draw(t, "n")
			tier := tierOf[key]
			sync()
			what := fmt.Sprintf("Policy(tier %d).AllowN(%q, %d) at %d", tier, key, n, now(clock))
			lim := got[tier]
			if rapid.Bool().Draw(t, "coalesced") {
				lim, what = gotC[tier], what+", coalesced"
			}
			wasBlocked := now(clock) < blocked[key]
			before := peekLimits(t, want[tier], key)
			dw, ew := want[tier].AllowN(ctx, key, n)
			dg, eg := lim.AllowN(ctx, key, n)
			compareAll(t, what, dw, ew, dg, eg)
			if ew != nil {
				return
			}
			counted(t, what, key, n, tier, dw, wasBlocked)
			if !dw.Allowed {
				// Denied: counted by none, on both stores.
				for name, p := range map[string]*ratekit.Limiter{"reference": want[tier], "store": got[tier]} {
					if after := peekLimits(t, p, key); !reflect.DeepEqual(after, before) {
						t.Fatalf("%s: denied, but the limits changed on the %s:\n  before %+v\n  after  %+v", what, name, before, after)
					}
				}
			}
		},
		// Limits of keys of their own (core.Request.Keys), under tags the
		// other actions do not use: the stores decide alike, one by one
		// or coalesced; a policy with penalties refuses them on both.
		"keys": func(t *rapid.T) {
			tag := "tag:" + keyGen.Draw(t, "key")
			own := make([]string, size)
			for i := range own {
				own[i] = rapid.SampledFrom([]string{"", "x", "y{", "%7B", "}z"}).Draw(t, "own key")
			}
			tier := rapid.IntRange(0, 1).Draw(t, "tier")
			r := core.Request{Key: tag, N: rapid.Int64Range(1, maxCost).Draw(t, "n"), Keys: own}
			sync()
			what := fmt.Sprintf("Policy(tier %d).Decide(%q, keys %q, %d) at %d", tier, tag, own, r.N, now(clock))
			lim := got[tier]
			if rapid.Bool().Draw(t, "coalesced") {
				lim, what = gotC[tier], what+", coalesced"
			}
			dw, ew := want[tier].Decide(ctx, r)
			dg, eg := lim.Decide(ctx, r)
			compareAll(t, what, dw, ew, dg, eg)
			penalized := slices.ContainsFunc(limits, func(l policyLimit) bool { return l.penalty > 0 })
			if penalized != (ew != nil) {
				t.Fatalf("%s: error %v from a policy with penalties: %v", what, ew, penalized)
			}
		},
		// A batch of one tier's keys on the store under test decides like
		// the same requests one by one, in order, on the reference: up to
		// a few requests, or now and then more than one batch script call
		// makes (64), so that a key's requests span calls.
		"batch": func(t *rapid.T) {
			tier := rapid.IntRange(0, 1).Draw(t, "tier")
			var tierKeys []string
			for _, k := range keys {
				if tierOf[k] == tier {
					tierKeys = append(tierKeys, k)
				}
			}
			if len(tierKeys) == 0 {
				return
			}
			kg := rapid.SampledFrom(tierKeys)
			size := rapid.OneOf(rapid.IntRange(1, 8), rapid.IntRange(1, 8), rapid.IntRange(60, 140)).Draw(t, "size")
			reqs := make([]core.Request, size)
			for i := range reqs {
				reqs[i] = core.Request{Key: kg.Draw(t, "key"), N: rapid.OneOf(rapid.Just(int64(1)), rapid.Int64Range(0, maxCost+1)).Draw(t, "n")}
			}
			sync()
			res := got[tier].AllowMany(ctx, reqs)
			if len(res) != len(reqs) {
				t.Fatalf("AllowMany of %d requests returned %d results", len(reqs), len(res))
			}
			for i, r := range reqs {
				what := fmt.Sprintf("Policy(tier %d).AllowMany item %d: AllowN(%q, %d) at %d", tier, i, r.Key, r.N, now(clock))
				wasBlocked := now(clock) < blocked[r.Key]
				dw, ew := want[tier].AllowN(ctx, r.Key, r.N)
				compareAll(t, what, dw, ew, res[i].Decision, res[i].Err)
				if ew == nil {
					counted(t, what, r.Key, r.N, tier, dw, wasBlocked)
				}
			}
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			tier := tierOf[key]
			sync()
			what := fmt.Sprintf("Policy(tier %d).Peek(%q) at %d", tier, key, now(clock))
			dw, ew := want[tier].Peek(ctx, key)
			dg, eg := got[tier].Peek(ctx, key)
			compareAll(t, what, dw, ew, dg, eg)
			if ew == nil {
				check(t, what, key, dw, now(clock) < blocked[key], "peek")
			}
		},
		"refund": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.Int64Range(0, maxCost+1).Draw(t, "n")
			tier := tierOf[key]
			sync()
			what := fmt.Sprintf("Policy(tier %d).Refund(%q, %d) at %d", tier, key, n, now(clock))
			dw, ew := want[tier].Refund(ctx, key, n)
			dg, eg := got[tier].Refund(ctx, key, n)
			compareAll(t, what, dw, ew, dg, eg)
			if ew == nil {
				check(t, what, key, dw, now(clock) < blocked[key], "refund")
				// A refund returns what Peek reports after it.
				for name, p := range map[string]*ratekit.Limiter{"reference": want[tier], "store": got[tier]} {
					if after, err := p.Peek(ctx, key); err != nil || !reflect.DeepEqual(after, dw) {
						t.Fatalf("%s on the %s returned %+v, then Peek %+v (%v)", what, name, dw, after, err)
					}
				}
				taint(key)
			}
		},
		// One limit decides alone, as another route of the application
		// would: the policy's decisions must follow its state.
		"single": func(t *rapid.T) {
			i := rapid.IntRange(0, size-1).Draw(t, "limit")
			key := keyGen.Draw(t, "key")
			tier := tierOf[key]
			sync()
			dw, ew := wantLs[tier][i].AllowN(ctx, key, 1)
			dg, eg := gotLs[tier][i].AllowN(ctx, key, 1)
			compare(t, fmt.Sprintf("limit %s alone: AllowN(%q, 1) at %d", limits[i].name, key, now(clock)), dw, ew, dg, eg)
			if ew == nil && dw.Allowed {
				at := max(now(clock), high[i][key])
				high[i][key] = at
				if at < tainted[i][key] {
					tainted[i][key] = max(tainted[i][key], at+wait(i))
					return
				}
				history[i][key] = append(history[i][key], engine.Event{At: at, Cost: 1})
				if err := limits[i].tiers[tier].bound(history[i][key]); err != nil {
					t.Fatalf("limit %s, key %q: bound violated: %v", limits[i].name, key, err)
				}
			}
		},
		// The key moves to the other tier, keeping its state.
		"tier": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			tierOf[key] = 1 - tierOf[key]
			taint(key)
		},
		"reset": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			tier := tierOf[key]
			sync()
			ew := want[tier].Reset(ctx, key)
			eg := got[tier].Reset(ctx, key)
			compare(t, fmt.Sprintf("Policy.Reset(%q)", key), core.Decision{}, ew, core.Decision{}, eg)
			for i := range limits {
				delete(history[i], key)
				delete(high[i], key)
				delete(tainted[i], key)
			}
			delete(blocked, key)
		},
	}
	if h.SetTime == nil || !h.ForwardOnlyTTL {
		actions["back"] = func(t *rapid.T) {
			p := int64(limits[0].tiers[0].period / time.Microsecond)
			clock.Advance(-time.Duration(rapid.Int64Range(1, 2*p).Draw(t, "back")) * time.Microsecond)
		}
	}
	t.Repeat(actions)
}

// checkBinding checks that a policy's decision d has the fields of the
// limit that binds it (core.Decision): when an enforced limit denies
// (denied), the enforced denier with the longest RetryAfter; otherwise the
// enforced limit with the least Remaining, or, in a policy with no
// enforced limit, the limit with the least Remaining. A penalty block
// that holds makes Remaining 0 and RetryAfter at least its end (check
// holds RetryAfter to that). Where limits tie, any of them may bind.
func checkBinding(t *rapid.T, what string, d core.Decision, denied bool) {
	enforced := false
	for _, ld := range d.Limits {
		enforced = enforced || !ld.Shadow
	}
	var best []core.LimitDecision
	for _, ld := range d.Limits {
		switch {
		case enforced && ld.Shadow, denied && ld.Allowed:
			continue
		case len(best) == 0:
		case denied && ld.RetryAfter < best[0].RetryAfter, !denied && ld.Remaining > best[0].Remaining:
			continue
		case denied && ld.RetryAfter > best[0].RetryAfter, !denied && ld.Remaining < best[0].Remaining:
			best = best[:0]
		}
		best = append(best, ld)
	}
	for _, b := range best {
		remaining := b.Remaining
		if d.Blocked {
			remaining = 0
		}
		if d.Limit == b.Limit && d.Remaining == remaining && d.ResetAfter == b.ResetAfter && d.Window == b.Window &&
			(!denied || d.RetryAfter >= b.RetryAfter) {
			return
		}
	}
	t.Fatalf("%s: the decision's own fields %+v are not those of its binding limit, one of %+v", what, d, best)
}

// now is clock's time in Unix µs.
func now(clock interface{ Now() time.Time }) int64 { return clock.Now().UnixMicro() }
