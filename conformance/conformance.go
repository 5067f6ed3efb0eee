package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/store/memory"
)

// Harness describes the store under test.
type Harness struct {
	// Runner is the store under test. It is shared by every check; the
	// suite isolates checks with a fresh key prefix each, so it never
	// assumes an empty store.
	Runner core.ScriptRunner
	// SetTime, when set, selects server-time mode: limiters get no Clock
	// and the suite calls SetTime with the fake time before every step, so
	// the store's own clock (TIME in Lua) must follow it, and so should its
	// TTLs. When nil, limiters get the suite's fake clock.
	SetTime func(time.Time)
	// ForwardOnlyTTL, in server-time mode, says that the store's TTLs
	// count only the forward moves of its clock, unlike Redis, whose keys
	// expire at an absolute time (miniredis with ClockTTL: a step back
	// does not give a key its time back). The suite then never steps the
	// clock back, since such a store would drop keys early.
	ForwardOnlyTTL bool
}

// Run runs the suite for every algorithm, each as a subtest: the state
// machine (whose batches use the batch script wherever the store lets
// requests share one, and which also decides through a coalescing
// limiter, bursts of concurrent calls included), then the refusal of
// corrupt state, then what state becomes when limits change between
// calls (change.go); then a state machine
// of policies (ratekit.NewPolicy) of random limits, tiers, shadow limits,
// penalties, refunds and batches; calendar windows (fixedwindow.NewCalendar) across
// clock changes; and last the concurrency limiter's state machine
// (see concurrency.go) and its refusal of corrupt state.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Runner == nil {
		t.Fatal("conformance: Harness.Runner is nil")
	}
	for _, a := range suite {
		if noBound(t, a) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { runMachine(rt, h, a) })
		})
		t.Run(a.name+"/corrupt", func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { checkCorrupt(rt, h, a) })
		})
		t.Run(a.name+"/change", func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { runChange(rt, h, a) })
		})
	}
	t.Run("policy", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) { runPolicy(rt, h) })
	})
	t.Run("calendar", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) { runCalendar(rt, h) })
	})
	t.Run("concurrency", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) { runConcurrency(rt, h) })
	})
	t.Run("concurrency/corrupt", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) { checkConcurrencyCorrupt(rt, h) })
	})
}

// A variant is one drawn configuration of an algorithm.
type variant struct {
	desc string
	// tag is appended to the suite's prefix for the algorithm's keys.
	tag string
	// params are the configuration, by the registry's names.
	params registry.Params
	// build returns the limiter over runner, with clock (nil: store time).
	build func(runner core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error)
	// maxCost is the largest cost that may ever pass.
	maxCost int64
	// window is every decision's Window: the time in which the
	// configuration gives back its whole Limit.
	window time.Duration
	// atMost says that the algorithm grants part of a request
	// (ratekit.Limiter.AllowAtMost); the others refuse it with
	// errors.ErrUnsupported.
	atMost bool
	// period is the configuration's time scale: its shortest duration
	// parameter (refill interval, window).
	period time.Duration
	// wait is the longest RetryAfter or ResetAfter the configuration
	// allows, once the clock has caught up with the key's last write.
	wait time.Duration
	// bound checks the algorithm's bound (engine.Spec.Bound) over the
	// allowed requests of one key since its last reset or
	// reconfiguration, the newest last. Each request's time is the key's
	// own: the clock, or the time of the key's last write when the clock
	// is behind it (a key's time never runs backwards), so bounds hold
	// across clock steps.
	bound func(history []engine.Event) error
	// looseBound is the bound for inexact times (engine.Spec.LooseBound,
	// RunServerClock).
	looseBound func(history []engine.Event) error
	// stateLen is how many integers the algorithm's state holds, 0 for a
	// sorted set (engine.Spec.StateLen); oldStateLen, when not 0, an
	// older shape it reads too (engine.Spec.OldStateLen).
	stateLen, oldStateLen int
}

// defaultPeriods are whole seconds or more: against a real server in
// client-clock mode, TTLs run on the server's real clock (with a minute of
// slack).
var defaultPeriods = []time.Duration{
	time.Second, 7 * time.Second, 13*time.Second + 370*time.Millisecond + 11*time.Microsecond,
	time.Minute, time.Hour,
}

var prefixSeq atomic.Int64

var prefixNonce = time.Now().UnixNano()

// keys mixes plain keys with keys full of braces and escapes, which must not
// change slots or collide ("{" and "%7B" are different keys).
var keys = []string{"a", "b", "user:42", "{", "%7B", "}x{", "a}b{c"}

func newPrefix() string {
	return fmt.Sprintf("rkconf:%x:%d:", prefixNonce, prefixSeq.Add(1))
}

func drawStart(t *rapid.T) time.Time {
	return time.UnixMicro(rapid.Int64Range(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()).Draw(t, "start"))
}

// reference draws a start time and returns the suite's fake clock set to
// it, the reference store on that clock, and the clock limiters get: the
// fake clock, or nil in server-time mode (the store's time is then set).
func reference(t *rapid.T, h Harness) (*fakeclock.Clock, *memory.Store, core.Clock) {
	start := drawStart(t)
	clock := fakeclock.New(start)
	ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	if h.SetTime != nil {
		h.SetTime(start)
		return clock, ref, nil
	}
	return clock, ref, clock
}

func runMachine(t *rapid.T, h Harness, a algorithm) {
	v := a.draw(t, nil)
	clock, ref, limClock := reference(t, h)
	defer ref.Close()
	prefix := newPrefix()
	// gotC decides through a coalescing limiter (coalesce.go), on the
	// same keys as got.
	gt := newGate(h.Runner)
	var want, got, gotC *ratekit.Limiter
	build := func(v variant) {
		var err error
		if want, err = v.build(ref, prefix, limClock); err != nil {
			t.Fatalf("%s: building the reference limiter: %v", v.desc, err)
		}
		if got, err = v.build(h.Runner, prefix, limClock); err != nil {
			t.Fatalf("%s: building the limiter under test: %v", v.desc, err)
		}
		c, err := v.build(gt, prefix, limClock)
		if err != nil {
			t.Fatalf("%s: building the coalescing limiter under test: %v", v.desc, err)
		}
		gotC = coalesced(t, c)
		t.Logf("config: %s", v.desc)
	}
	build(v)

	ctx := context.Background()
	// history holds each key's allowed requests since its last reset or
	// reconfiguration; high each key's time (the latest time at which it
	// was written) since its last reset.
	history := map[string][]engine.Event{}
	high := map[string]int64{}
	// tainted[key] is the time until which state written under an earlier
	// configuration may shape the key's decisions: bounds speak of one
	// configuration, so they are checked from then on.
	tainted := map[string]int64{}
	period := func() int64 { return int64(v.period / time.Microsecond) }
	keyGen := rapid.SampledFrom(keys)
	step := func(t *rapid.T) int64 {
		p := period()
		return rapid.OneOf(
			rapid.Just(int64(0)),
			rapid.Int64Range(1, 2000),
			rapid.Int64Range(0, p),
			rapid.Map(rapid.Int64Range(1, 4), func(k int64) int64 { return k * p }),
			rapid.Map(rapid.Int64Range(1, 4), func(k int64) int64 { return k*p - 1 }),
			rapid.Int64Range(0, 30*p),
		).Draw(t, "step")
	}
	cost := func(t *rapid.T, name string) int64 {
		return rapid.OneOf(
			rapid.Just(int64(1)),
			rapid.Int64Range(1, v.maxCost),
			rapid.Int64Range(-1, v.maxCost+2),
		).Draw(t, name)
	}
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}
	now := func() int64 { return clock.Now().UnixMicro() }
	// checkDecision holds every decision to what its configuration
	// allows: Remaining within [0, Limit], waits no longer than the
	// configuration's longest plus the time the clock is behind the key,
	// and the configuration's Window.
	checkDecision := func(t *rapid.T, what, key string, d core.Decision) {
		behind := time.Duration(max(high[key]-now(), 0)) * time.Microsecond
		switch {
		case d.Remaining < 0 || d.Remaining > d.Limit:
			t.Fatalf("%s: %s: Remaining %d outside [0, Limit %d]", v.desc, what, d.Remaining, d.Limit)
		case d.Window != v.window || d.Limits != nil || d.Blocked:
			t.Fatalf("%s: %s: Window %v (the configuration's is %v), Limits %v, Blocked %v: not a single limit's decision", v.desc, what, d.Window, v.window, d.Limits, d.Blocked)
		case d.RetryAfter > v.wait+behind || d.ResetAfter > v.wait+behind:
			t.Fatalf("%s: %s: RetryAfter %v / ResetAfter %v longer than the configuration allows (%v, the clock %v behind the key)", v.desc, what, d.RetryAfter, d.ResetAfter, v.wait, behind)
		case d.Allowed && d.RetryAfter != 0, !d.Allowed && d.RetryAfter <= 0:
			t.Fatalf("%s: %s: Allowed %v with RetryAfter %v", v.desc, what, d.Allowed, d.RetryAfter)
		}
	}
	allowed := func(key string, n int64) {
		at := max(now(), high[key])
		high[key] = at
		if at < tainted[key] {
			// State from an older configuration may still count here.
			tainted[key] = max(tainted[key], at+int64(v.wait/time.Microsecond))
			return
		}
		history[key] = append(history[key], engine.Event{At: at, Cost: n})
		if err := v.bound(history[key]); err != nil {
			t.Fatalf("%s: key %q: bound violated: %v", v.desc, key, err)
		}
	}
	// allowN decides on both stores (through the coalescing limiter or
	// not), compares, checks and records.
	allowN := func(t *rapid.T, key string, n int64) (core.Decision, error) {
		sync()
		what := fmt.Sprintf("AllowN(%q, %d) at %d", key, n, now())
		lim := got
		if rapid.Bool().Draw(t, "coalesced") {
			lim, what = gotC, what+", coalesced"
		}
		dw, ew := want.AllowN(ctx, key, n)
		dg, eg := lim.AllowN(ctx, key, n)
		compare(t, what, dw, ew, dg, eg)
		if ew == nil {
			checkDecision(t, what, key, dw)
			if dw.Allowed {
				allowed(key, n)
			}
		}
		return dw, ew
	}
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			clock.Advance(time.Duration(step(t)) * time.Microsecond)
		},
		"allow": func(t *rapid.T) {
			allowN(t, keyGen.Draw(t, "key"), cost(t, "n"))
		},
		// A denied request retried after exactly its RetryAfter passes,
		// if nothing else was counted; a microsecond earlier it does not.
		"retry": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.Int64Range(1, v.maxCost).Draw(t, "n")
			d, err := allowN(t, key, n)
			if err != nil || d.Allowed {
				return
			}
			clock.Advance(d.RetryAfter - time.Microsecond)
			if early, err := allowN(t, key, n); err == nil && early.Allowed {
				t.Fatalf("%s: key %q: allowed %v after a denial whose RetryAfter was %v", v.desc, key, d.RetryAfter-time.Microsecond, d.RetryAfter)
			}
			clock.Advance(time.Microsecond)
			if late, err := allowN(t, key, n); err == nil && !late.Allowed {
				t.Fatalf("%s: key %q: still denied after the RetryAfter of %v (now %+v)", v.desc, key, d.RetryAfter, late)
			}
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			dw, ew := want.Peek(ctx, key)
			dg, eg := got.Peek(ctx, key)
			what := fmt.Sprintf("Peek(%q) at %d", key, now())
			compare(t, what, dw, ew, dg, eg)
			if ew == nil {
				checkDecision(t, what, key, dw)
			}
			// Peek writes nothing: a second one answers the same.
			dg2, eg2 := got.Peek(ctx, key)
			compare(t, what+" repeated", dg, eg, dg2, eg2)
		},
		// A refund gives cost back: the bounds then speak of what is left,
		// which the history does not know, so they are checked again once
		// the refund can no longer shape a decision.
		"refund": func(t *rapid.T) {
			key, n := keyGen.Draw(t, "key"), cost(t, "n")
			sync()
			what := fmt.Sprintf("Refund(%q, %d) at %d", key, n, now())
			dw, ew := want.Refund(ctx, key, n)
			dg, eg := got.Refund(ctx, key, n)
			compare(t, what, dw, ew, dg, eg)
			if ew == nil {
				checkDecision(t, what, key, dw)
				// A refund returns what Peek reports after it: the store's
				// Peek is the reference's, which is what its refund returned.
				pw, epw := want.Peek(ctx, key)
				pg, epg := got.Peek(ctx, key)
				compare(t, what+", then Peek", pw, epw, pg, epg)
				if epw != nil || !reflect.DeepEqual(pw, dw) {
					t.Fatalf("%s: %s on the reference returned %+v, then Peek %+v (%v)", v.desc, what, dw, pw, epw)
				}
				// The refund may have written the key as of now.
				high[key] = max(now(), high[key])
				tainted[key] = max(tainted[key], high[key]+int64(v.wait/time.Microsecond))
				delete(history, key)
			}
		},
		// A request refunded at the instant it was allowed is undone: Peek
		// answers as before it, on both stores.
		"undo": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.Int64Range(1, v.maxCost).Draw(t, "n")
			if now() < tainted[key] || now() < high[key] {
				return // state from an older configuration, or a clock behind the key
			}
			sync()
			before, err := want.Peek(ctx, key)
			if err != nil {
				return
			}
			d, err := allowN(t, key, n)
			if err != nil || !d.Allowed {
				return
			}
			what := fmt.Sprintf("Refund(%q, %d) right after AllowN at %d", key, n, now())
			dw, ew := want.Refund(ctx, key, n)
			dg, eg := got.Refund(ctx, key, n)
			compare(t, what, dw, ew, dg, eg)
			if ew != nil {
				t.Fatalf("%s: %v", what, ew)
			}
			// The store's Peek is the reference's, which is as before.
			pw, epw := want.Peek(ctx, key)
			pg, epg := got.Peek(ctx, key)
			compare(t, what+", then Peek", pw, epw, pg, epg)
			if epw != nil || !reflect.DeepEqual(pw, before) {
				t.Fatalf("%s: %s on the reference: Peek %+v (%v) after the refund, %+v before the request", v.desc, what, pw, epw, before)
			}
			// Undone, but the refund may have left state that keeps the
			// key's time, or none: the bounds resume as after a refund.
			tainted[key] = max(tainted[key], high[key]+int64(v.wait/time.Microsecond))
			delete(history, key)
		},
		"reset": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			ew := want.Reset(ctx, key)
			eg := got.Reset(ctx, key)
			compare(t, fmt.Sprintf("Reset(%q)", key), core.Decision{}, ew, core.Decision{}, eg)
			delete(history, key)
			delete(high, key)
			delete(tainted, key)
		},
		// Limits change on live keys: a new configuration of the same
		// algorithm takes over the keys the old one wrote.
		"reconfigure": func(t *rapid.T) {
			for key, at := range high {
				tainted[key] = max(tainted[key], at+int64(v.wait/time.Microsecond))
			}
			v = a.draw(t, nil)
			build(v)
			clear(history)
		},
	}
	actions["burst"] = burstAction(gt, prefix, func() (*ratekit.Limiter, *ratekit.Limiter, variant) { return want, gotC, v }, keyGen, cost, sync,
		func(t *rapid.T, what, key string, d core.Decision, n int64) {
			checkDecision(t, what, key, d)
			if d.Allowed {
				allowed(key, n)
			}
		})
	if h.SetTime == nil || !h.ForwardOnlyTTL {
		// The clock steps back: a little, by whole periods, or to before
		// the last write of a key.
		actions["back"] = func(t *rapid.T) {
			p := period()
			d := rapid.OneOf(
				rapid.Int64Range(1, 2000),
				rapid.Int64Range(1, p),
				rapid.Map(rapid.Int64Range(1, 4), func(k int64) int64 { return k * p }),
			).Draw(t, "back")
			if rapid.Bool().Draw(t, "before last write") {
				if w, ok := high[keyGen.Draw(t, "key")]; ok {
					d += now() - w
				}
			}
			clock.Advance(-time.Duration(max(d, 0)) * time.Microsecond)
		}
	}
	// AllowAtMost grants part of a request where the algorithm can (GCRA);
	// the others refuse it, sending nothing, with errors.ErrUnsupported.
	actions["atmost"] = func(t *rapid.T) {
		key, n := keyGen.Draw(t, "key"), rapid.Int64Range(-1, 2*v.maxCost+2).Draw(t, "n")
		sync()
		gw, dw, ew := want.AllowAtMost(ctx, key, n)
		gg, dg, eg := got.AllowAtMost(ctx, key, n)
		what := fmt.Sprintf("AllowAtMost(%q, %d) at %d", key, n, now())
		if !v.atMost {
			for name, err := range map[string]error{"reference": ew, "store": eg} {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("%s: %s: %v, want an error wrapping errors.ErrUnsupported", what, name, err)
				}
			}
			return
		}
		compare(t, what, dw, ew, dg, eg)
		if gw != gg {
			t.Fatalf("%s: reference granted %d, store %d", what, gw, gg)
		}
		if ew == nil && (gw < 0 || gw > n || (gw > 0) != dw.Allowed) {
			t.Fatalf("%s: granted %d with %+v", what, gw, dw)
		}
		if ew == nil {
			checkDecision(t, what, key, dw)
		}
		if gw > 0 {
			allowed(key, gw)
		}
	}
	// A store sends nothing for a call whose context has ended: it
	// returns an error wrapping core.ErrStore and the context's, and the
	// script, which would have written a key, wrote nothing.
	actions["ended"] = func(t *rapid.T) {
		key := keyspace.Key(prefix+"ended:", keyGen.Draw(t, "key"), "")
		ended, cancel := context.WithCancel(ctx)
		cancel()
		want := context.Canceled
		if rapid.Bool().Draw(t, "past deadline") {
			ended, cancel = context.WithDeadline(ctx, time.Unix(1, 0))
			defer cancel()
			want = context.DeadlineExceeded
		}
		sync()
		_, err := h.Runner.RunScript(ended, endedScript, []string{key}, []int64{1}, nil)
		if !errors.Is(err, core.ErrStore) || !errors.Is(err, want) {
			t.Fatalf("RunScript with an ended context: %v, want an error wrapping core.ErrStore and %v", err, want)
		}
		if r, err := h.Runner.RunScript(ctx, existsScript, []string{key}, nil, nil); err != nil || len(r) != 1 || r[0] != 0 {
			t.Fatalf("RunScript with an ended context wrote %s (it exists: %v, %v)", key, r, err)
		}
	}
	// A batch on the store under test decides like the same requests one
	// by one, in order, on the reference.
	actions["batch"] = func(t *rapid.T) {
		// Now and then more requests than one batch script call makes
		// (64) on the suite's few keys: a key's requests then span calls,
		// which must apply in order.
		size := rapid.OneOf(rapid.IntRange(1, 8), rapid.IntRange(1, 8), rapid.IntRange(1, 8), rapid.IntRange(60, 140)).Draw(t, "size")
		reqs := make([]core.Request, size)
		for i := range reqs {
			reqs[i] = core.Request{Key: keyGen.Draw(t, "key"), N: cost(t, "n")}
		}
		sync()
		res := got.AllowMany(ctx, reqs)
		if len(res) != len(reqs) {
			t.Fatalf("AllowMany of %d requests returned %d results", len(reqs), len(res))
		}
		for i, r := range reqs {
			what := fmt.Sprintf("AllowMany item %d: AllowN(%q, %d) at %d", i, r.Key, r.N, now())
			dw, ew := want.AllowN(ctx, r.Key, r.N)
			compare(t, what, dw, ew, res[i].Decision, res[i].Err)
			if ew == nil {
				checkDecision(t, what, r.Key, dw)
				if dw.Allowed {
					allowed(r.Key, r.N)
				}
			}
		}
	}
	t.Repeat(actions)
}

// compare fails t unless the store under test answered like the reference.
func compare(t *rapid.T, what string, want core.Decision, wantErr error, got core.Decision, gotErr error) {
	if wantErr != nil || gotErr != nil {
		if kind(wantErr) == nil || kind(wantErr) != kind(gotErr) {
			t.Fatalf("%s: reference error %v, store error %v", what, wantErr, gotErr)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s:\n  reference %+v\n  store     %+v", what, want, got)
	}
}

// endedScript writes ARGV[1] at KEYS[1], for an hour; existsScript
// replies 1 when KEYS[1] exists, 0 when not. They are the suite's own, so
// that a call with an ended context is a store's alone to refuse.
var (
	endedScript = core.NewScript("rkconf-ended", `redis.call('SET', KEYS[1], ARGV[1], 'PX', 3600000) return {1}`,
		func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
			tx.Put(keys[0], 1, time.Hour)[0] = args[0]
			return append(reply, 1), nil
		}, false)
	existsScript = core.NewScript("rkconf-exists", `return {redis.call('EXISTS', KEYS[1])}`,
		func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
			if _, ok := tx.Get(keys[0]); ok {
				return append(reply, 1), nil
			}
			return append(reply, 0), nil
		}, false)
)

// kind returns the sentinel an error wraps, nil for nil or unknown errors.
func kind(err error) error {
	for _, s := range []error{core.ErrInvalidKey, core.ErrInvalidCost, core.ErrInvalidLease, core.ErrInvalidTime, core.ErrInvalidConfig, core.ErrCorruptState} {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}
