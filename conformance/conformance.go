package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/fakeclock"
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
}

// Run runs the suite for every algorithm, each as a subtest.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Runner == nil {
		t.Fatal("conformance: Harness.Runner is nil")
	}
	for _, a := range algorithms {
		t.Run(a.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { runMachine(rt, h, a) })
		})
	}
}

// A variant is one drawn configuration of an algorithm.
type variant struct {
	desc string
	// build returns the limiter over runner, with clock (nil: store time).
	build func(runner core.ScriptRunner, prefix string, clock core.Clock) (core.Limiter, error)
	// maxCost is the largest cost that may ever pass.
	maxCost int64
	// period is the algorithm's natural time scale (refill interval, window).
	period time.Duration
	// bound checks the algorithm's bound over the allowed requests of one
	// key since its last reset, the newest last.
	bound func(history []event) error
}

// atMost is the partial grant some limiters offer (gcra.Limiter).
type atMost interface {
	AllowAtMost(ctx context.Context, key string, n int64) (int64, core.Decision, error)
}

// batcher is what every ratekit limiter offers for batches.
type batcher interface {
	AllowMany(ctx context.Context, reqs []core.Request) []core.Result
}

var algorithms = []algorithm{
	{name: "tokenbucket", draw: drawTokenBucket},
	{name: "fixedwindow", draw: drawFixedWindow},
	{name: "slidinglog", draw: drawSlidingLog},
	{name: "slidingcounter", draw: drawSlidingCounter},
	{name: "leakybucket", draw: drawLeakyBucket},
	{name: "gcra", draw: drawGCRA},
}

// periods are whole seconds or more: against a real server in client-clock
// mode, TTLs run on the server's real clock (with a minute of slack).
var periods = []time.Duration{
	time.Second, 7 * time.Second, 13*time.Second + 370*time.Millisecond + 11*time.Microsecond,
	time.Minute, time.Hour,
}

type event struct {
	at   int64 // Unix µs
	cost int64
}

type algorithm struct {
	name string
	draw func(t *rapid.T) variant
}

var prefixSeq atomic.Int64

var prefixNonce = time.Now().UnixNano()

// keys mixes plain keys with keys full of braces and escapes, which must not
// change slots or collide ("{" and "%7B" are different keys).
var keys = []string{"a", "b", "user:42", "{", "%7B", "}x{", "a}b{c"}

func runMachine(t *rapid.T, h Harness, a algorithm) {
	v := a.draw(t)
	start := time.UnixMicro(rapid.Int64Range(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()).Draw(t, "start"))
	clock := fakeclock.New(start)
	prefix := fmt.Sprintf("rkconf:%x:%d:", prefixNonce, prefixSeq.Add(1))

	ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	defer ref.Close()

	var limClock core.Clock = clock
	if h.SetTime != nil {
		limClock = nil
		h.SetTime(start)
	}
	want, err := v.build(ref, prefix, limClock)
	if err != nil {
		t.Fatalf("%s: building the reference limiter: %v", v.desc, err)
	}
	got, err := v.build(h.Runner, prefix, limClock)
	if err != nil {
		t.Fatalf("%s: building the limiter under test: %v", v.desc, err)
	}
	t.Logf("config: %s", v.desc)

	ctx := context.Background()
	history := map[string][]event{}
	period := int64(v.period / time.Microsecond)
	keyGen := rapid.SampledFrom(keys)
	step := rapid.OneOf(
		rapid.Just(int64(0)),
		rapid.Int64Range(1, 2000),
		rapid.Int64Range(0, period),
		rapid.Map(rapid.Int64Range(1, 4), func(k int64) int64 { return k * period }),
		rapid.Map(rapid.Int64Range(1, 4), func(k int64) int64 { return k*period - 1 }),
		rapid.Int64Range(0, 30*period),
	)
	costGen := rapid.OneOf(
		rapid.Just(int64(1)),
		rapid.Int64Range(1, v.maxCost),
		rapid.Int64Range(-1, v.maxCost+2),
	)
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}

	allowed := func(key string, n int64) {
		history[key] = append(history[key], event{at: clock.Now().UnixMicro(), cost: n})
		if err := v.bound(history[key]); err != nil {
			t.Fatalf("%s: key %q: bound violated: %v", v.desc, key, err)
		}
	}
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			d := step.Draw(t, "step")
			clock.Advance(time.Duration(d) * time.Microsecond)
		},
		"allow": func(t *rapid.T) {
			key, n := keyGen.Draw(t, "key"), costGen.Draw(t, "n")
			sync()
			dw, ew := want.AllowN(ctx, key, n)
			dg, eg := got.AllowN(ctx, key, n)
			compare(t, fmt.Sprintf("AllowN(%q, %d) at %d", key, n, clock.Now().UnixMicro()), dw, ew, dg, eg)
			if ew == nil && dw.Allowed {
				allowed(key, n)
			}
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			dw, ew := want.Peek(ctx, key)
			dg, eg := got.Peek(ctx, key)
			what := fmt.Sprintf("Peek(%q) at %d", key, clock.Now().UnixMicro())
			compare(t, what, dw, ew, dg, eg)
			// Peek writes nothing: a second one answers the same.
			dg2, eg2 := got.Peek(ctx, key)
			compare(t, what+" repeated", dg, eg, dg2, eg2)
		},
		"reset": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			sync()
			ew := want.Reset(ctx, key)
			eg := got.Reset(ctx, key)
			compare(t, fmt.Sprintf("Reset(%q)", key), core.Decision{}, ew, core.Decision{}, eg)
			delete(history, key)
		},
	}
	if pw, ok := want.(atMost); ok {
		pg, ok := got.(atMost)
		if !ok {
			t.Fatalf("%T has AllowAtMost, %T does not", want, got)
		}
		actions["atmost"] = func(t *rapid.T) {
			key, n := keyGen.Draw(t, "key"), rapid.Int64Range(-1, 2*v.maxCost+2).Draw(t, "n")
			sync()
			gw, dw, ew := pw.AllowAtMost(ctx, key, n)
			gg, dg, eg := pg.AllowAtMost(ctx, key, n)
			what := fmt.Sprintf("AllowAtMost(%q, %d) at %d", key, n, clock.Now().UnixMicro())
			compare(t, what, dw, ew, dg, eg)
			if gw != gg {
				t.Fatalf("%s: reference granted %d, store %d", what, gw, gg)
			}
			if ew == nil && (gw < 0 || gw > n || (gw > 0) != dw.Allowed) {
				t.Fatalf("%s: granted %d with %+v", what, gw, dw)
			}
			if gw > 0 {
				allowed(key, gw)
			}
		}
	}
	if bg, ok := got.(batcher); ok {
		// A batch on the store under test decides like the same requests
		// one by one, in order, on the reference.
		actions["batch"] = func(t *rapid.T) {
			reqs := make([]core.Request, rapid.IntRange(1, 8).Draw(t, "size"))
			for i := range reqs {
				reqs[i] = core.Request{Key: keyGen.Draw(t, "key"), N: costGen.Draw(t, "n")}
			}
			sync()
			res := bg.AllowMany(ctx, reqs)
			if len(res) != len(reqs) {
				t.Fatalf("AllowMany of %d requests returned %d results", len(reqs), len(res))
			}
			for i, r := range reqs {
				dw, ew := want.AllowN(ctx, r.Key, r.N)
				compare(t, fmt.Sprintf("AllowMany item %d: AllowN(%q, %d) at %d", i, r.Key, r.N, clock.Now().UnixMicro()), dw, ew, res[i].Decision, res[i].Err)
				if ew == nil && dw.Allowed {
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
	if want != got {
		t.Fatalf("%s:\n  reference %+v\n  store     %+v", what, want, got)
	}
}

// kind returns the sentinel an error wraps, nil for nil or unknown errors.
func kind(err error) error {
	for _, s := range []error{core.ErrInvalidKey, core.ErrInvalidCost, core.ErrInvalidTime, core.ErrInvalidConfig} {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}
