package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/store/memory"
)

// otherParams returns a's default parameters with the limit raised by 3
// and every duration doubled: a configuration other than the defaults.
func otherParams(a algorithms.Algorithm) algorithms.Params {
	p := a.Defaults()
	for _, prm := range a.Params {
		switch {
		case prm.Limit:
			p[prm.Name] += 3
		case prm.Kind == algorithms.Duration:
			p[prm.Name] *= 2
		}
	}
	return p
}

// paramsStores returns a memory store on clock, and the same store as a
// store that runs scripts (the composed scripts' twins, the path of the
// Redis stores, batches included).
func paramsStores(t *testing.T, clock core.Clock) map[string]core.ScriptRunner {
	t.Helper()
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return map[string]core.ScriptRunner{"in process": s, "scripts": oneNode{s}}
}

// A request that gives its own Params is decided exactly as a limiter
// built with them decides it: every operation, every Decision field
// (Limit and Window those of the Params), for every algorithm, in process
// and through the scripts.
func TestParamsDecideAsTheirLimiter(t *testing.T) {
	ctx := context.Background()
	for _, a := range algorithms.All {
		for _, name := range []string{"in process", "scripts"} {
			t.Run(a.Name+"/"+name, func(t *testing.T) {
				clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
				store := paramsStores(t, clock)[name]
				other := otherParams(a)
				ref, err := a.New(store, other, clock, "ref:")
				if err != nil {
					t.Fatal(err)
				}
				lim, err := a.New(store, a.Defaults(), clock, "lim:")
				if err != nil {
					t.Fatal(err)
				}
				p, err := a.NewParams(other)
				if err != nil {
					t.Fatal(err)
				}
				if p.Algorithm() != a.Name || p.Limit() != ref.MaxCost() {
					t.Fatalf("Params %v: Algorithm %q, Limit %d; want %q, %d", p, p.Algorithm(), p.Limit(), a.Name, ref.MaxCost())
				}
				ps := []core.Params{p}
				rng := rand.New(rand.NewPCG(1, uint64(len(a.Name))))
				for step := range 200 {
					clock.Advance(time.Duration(rng.Int64N(int64(2 * time.Second))))
					r := core.Request{Key: "k", N: 1 + rng.Int64N(3), Op: core.Op(rng.IntN(3))}
					want, werr := ref.Decide(ctx, r)
					r.Params = ps
					got, gerr := lim.Decide(ctx, r)
					if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d, %v of %d: got %+v, %v; want %+v, %v", step, r.Op, r.N, got, gerr, want, werr)
					}
				}
				// A batch decides each request as Decide would.
				reqs := make([]core.Request, 9)
				for i := range reqs {
					reqs[i] = core.Request{Key: fmt.Sprint("b", i%4), N: 1, Params: ps}
				}
				got := lim.AllowMany(ctx, reqs)
				for i, r := range reqs {
					want, err := ref.Decide(ctx, core.Request{Key: r.Key, N: r.N})
					if err != nil || got[i].Err != nil || !reflect.DeepEqual(got[i].Decision, want) {
						t.Fatalf("AllowMany request %d: %+v, %v; want %+v, %v", i, got[i].Decision, got[i].Err, want, err)
					}
				}
			})
		}
	}
}

// A batch whose requests give different limits decides each as Decide
// would, one after the other: requests with the same limits share a
// script call, and a key whose requests give different limits keeps their
// order.
func TestParamsMixedBatch(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"in process", "scripts"} {
		t.Run(name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			stores := paramsStores(t, clock)
			build := func(prefix string) *ratekit.Limiter {
				l, err := tokenbucket.New(stores[name], tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			batch, one := build("batch:"), build("one:")
			p5 := must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Hour}))
			p1 := must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour}))
			var reqs []core.Request
			for i := range 40 {
				var ps []core.Params
				switch i % 3 {
				case 1:
					ps = []core.Params{p5}
				case 2:
					ps = []core.Params{p1}
				}
				// Keys a and b always come with the same limits; key c
				// with all three in turn.
				key := []string{"a", "b", "c"}[i%2]
				if i%5 == 0 {
					key = "c"
				}
				if key == "a" {
					ps = []core.Params{p5}
				}
				reqs = append(reqs, core.Request{Key: key, N: 1, Params: ps})
			}
			got := batch.AllowMany(ctx, reqs)
			for i, r := range reqs {
				want, err := one.Decide(ctx, r)
				if err != nil || got[i].Err != nil || !reflect.DeepEqual(got[i].Decision, want) {
					t.Fatalf("request %d on %q: %+v, %v; want %+v, %v", i, r.Key, got[i].Decision, got[i].Err, want, err)
				}
			}
		})
	}
}

// must returns a function that returns Params, failing t on their error.
func must(t *testing.T) func(core.Params, error) core.Params {
	return func(p core.Params, err error) core.Params {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// A policy takes one Params per limit; a nil entry keeps that limit's
// own. It decides as a policy of limiters built with them.
func TestParamsPolicy(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, store := range paramsStores(t, clock) {
		t.Run(name, func(t *testing.T) {
			policy := func(prefix string, capacity, limit int64) *ratekit.Limiter {
				tb, err := tokenbucket.New(store, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Second, Prefix: prefix + "tb:", Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				fw, err := fixedwindow.New(store, fixedwindow.Config{Limit: limit, Window: time.Minute, Prefix: prefix + "fw:", Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: tb}, {Name: "minute", Limiter: fw}}})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			ref, lim := policy(name+"ref:", 4, 9), policy(name+"lim:", 4, 20)
			minute := must(t)(fixedwindow.NewParams(fixedwindow.Config{Limit: 9, Window: time.Minute}))
			ps := []core.Params{nil, minute}
			for step := range 30 {
				clock.Advance(300 * time.Millisecond)
				want, werr := ref.AllowN(ctx, "k", 1)
				got, gerr := lim.Decide(ctx, core.Request{Key: "k", N: 1, Params: ps})
				if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: %+v, %v; want %+v, %v", step, got, gerr, want, werr)
				}
			}
			// The cost may be up to the least Limit of the limits applied.
			if _, err := lim.Decide(ctx, core.Request{Key: "k2", N: 5, Params: ps}); !errors.Is(err, core.ErrInvalidCost) {
				t.Errorf("a cost of 5 above the second limit's 4: %v, want ErrInvalidCost", err)
			}
		})
	}
}

// Params are checked as a Config is, with the same errors, and a limiter
// refuses Params that are not for it.
func TestParamsErrors(t *testing.T) {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The same errors as New's, for every bad configuration New refuses.
	for _, cfg := range []tokenbucket.Config{
		{Capacity: 0, RefillRate: 1, RefillInterval: time.Second},
		{Capacity: 1, RefillRate: -1, RefillInterval: time.Second},
		{Capacity: 1, RefillRate: 1, RefillInterval: time.Nanosecond},
		{Capacity: 1 << 51, RefillRate: 1, RefillInterval: time.Hour},
	} {
		_, nerr := tokenbucket.New(store, cfg)
		_, perr := tokenbucket.NewParams(cfg)
		if nerr == nil || perr == nil || nerr.Error() != perr.Error() || !errors.Is(perr, core.ErrInvalidConfig) {
			t.Errorf("%+v: New says %v, NewParams %v", cfg, nerr, perr)
		}
	}
	for _, cfg := range []tokenbucket.Config{
		{Capacity: 1, RefillRate: 1, RefillInterval: time.Second, Prefix: "p:"},
		{Capacity: 1, RefillRate: 1, RefillInterval: time.Second, Clock: fakeclock.New(time.Now())},
	} {
		if _, err := tokenbucket.NewParams(cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("NewParams with a Prefix or a Clock: %v, want ErrInvalidConfig", err)
		}
	}

	tb, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tbp := must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second}))
	gp := must(t)(gcra.NewParams(gcra.Config{Rate: 1, Period: time.Second, Burst: 2}))
	cal := must(t)(fixedwindow.NewCalendarParams(fixedwindow.CalendarConfig{Limit: 3, Period: fixedwindow.Day}))
	fw, err := fixedwindow.New(store, fixedwindow.Config{Limit: 5, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		lim  core.Limiter
		r    core.Request
		want error
		says string
	}{
		{"another algorithm's", tb, core.Request{Key: "k", N: 1, Params: []core.Params{gp}}, core.ErrInvalidConfig, "gcra Params"},
		{"one Params too many", tb, core.Request{Key: "k", N: 1, Params: []core.Params{tbp, tbp}}, core.ErrInvalidConfig, "2 Params"},
		{"not built by NewParams", tb, core.Request{Key: "k", N: 1, Params: []core.Params{fake{}}}, core.ErrInvalidConfig, "NewParams"},
		{"a calendar's without a Clock", fw, core.Request{Key: "k", N: 1, Params: []core.Params{cal}}, core.ErrInvalidConfig, "without a Clock"},
		{"a cost above the Params' Limit", tb, core.Request{Key: "k", N: 3, Params: []core.Params{tbp}}, core.ErrInvalidCost, ""},
		{"an unknown Op", tb, core.Request{Key: "k", N: 1, Op: 7}, core.ErrInvalidConfig, "Op(7)"},
		{"an empty key first", tb, core.Request{N: 1, Params: []core.Params{gp}}, core.ErrInvalidKey, ""},
	} {
		_, err := c.lim.Decide(ctx, c.r)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
		res := tb.AllowMany(ctx, []core.Request{c.r})
		if c.lim == core.Limiter(tb) && (res[0].Err == nil || res[0].Err.Error() != err.Error()) && c.r.Op == core.OpAllow {
			t.Errorf("%s: AllowMany says %v, Decide %v", c.name, res[0].Err, err)
		}
	}
	if res := tb.AllowMany(ctx, []core.Request{{Key: "k", N: 1, Op: core.OpPeek}}); !errors.Is(res[0].Err, core.ErrInvalidConfig) {
		t.Errorf("AllowMany of an OpPeek request: %v, want ErrInvalidConfig", res[0].Err)
	}
	if got := tbp.String(); got != "tokenbucket{Capacity: 2, RefillRate: 1, RefillInterval: 1s, Carry: used}" {
		t.Errorf("String() = %q", got)
	}
	if got := cal.String(); got != "fixedwindow{Limit: 3, Window: 744h0m0s, Aligned: false, Calendar: day in UTC}" {
		t.Errorf("String() = %q", got)
	}
}

// fake is a core.Params no algorithm package built.
type fake struct{}

func (fake) Algorithm() string     { return "tokenbucket" }
func (fake) Limit() int64          { return 10 }
func (fake) Window() time.Duration { return time.Second }
func (fake) String() string        { return "fake" }

// Params made in advance are equal when their configurations are, and a
// decision with them allocates nothing more than one without, in
// process.
func TestParamsInProcessDoNotAllocate(t *testing.T) {
	a := must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second}))
	b := must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second}))
	if a != b {
		t.Errorf("Params of equal configurations differ: %v, %v", a, b)
	}
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	for _, alg := range algorithms.All {
		lim, err := alg.New(store, alg.Defaults(), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		p, err := alg.NewParams(otherParams(alg))
		if err != nil {
			t.Fatal(err)
		}
		r := core.Request{Key: "alloc", N: 1, Params: []core.Params{p}}
		lim.Decide(ctx, r) // the key exists from now on
		if n := testing.AllocsPerRun(100, func() { lim.Decide(ctx, r) }); n > 0 && !raceEnabled {
			t.Errorf("%s: %v allocations per decision with Params", alg.Name, n)
		}
	}
}

// Every wrapper decides a request with its Params: the request's limits
// apply through failsafe (and its Local while the store is down),
// denycache (a denial under some limits answers only requests that bring
// the same), hotkey (which leaves them to its source) and a coalescing
// limiter.
func TestParamsThroughWrappers(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	stores := paramsStores(t, clock)
	bucket := func(store core.ScriptRunner, prefix string) *ratekit.Limiter {
		l, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	five := []core.Params{must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Hour}))}
	one := []core.Params{must(t)(tokenbucket.NewParams(tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour}))}
	wrappers := map[string]core.Limiter{}
	wrappers["failsafe"] = mustWrap(failsafe.New(failsafe.Config{Limiter: bucket(stores["scripts"], "fs:"), Clock: clock}))
	wrappers["denycache"] = mustWrap(denycache.New(bucket(stores["scripts"], "dc:"), denycache.WithClock(clock)))
	wrappers["hotkey"] = mustWrap(hotkey.New(bucket(stores["scripts"], "hk:"), hotkey.Config{Lease: 1, TTL: time.Minute, Clock: clock}))
	wrappers["coalesced"] = mustWrap(ratekit.Coalesce(bucket(stores["scripts"], "co:")))
	for name, w := range wrappers {
		for i := range 6 {
			d, err := w.Decide(ctx, core.Request{Key: "k", N: 1, Params: five})
			if err != nil || d.Allowed != (i < 5) || d.Limit != 5 {
				t.Errorf("%s: request %d with a capacity of 5: %+v, %v", name, i, d, err)
			}
			// The limiter's own capacity of 2 reads what the key used
			// (ratekit.CarryUsed, tokenbucket's package doc).
			left := max(2-int64(i+1), 0)
			if d, err := w.Peek(ctx, "k"); err != nil || d.Allowed != (left > 0) || d.Limit != 2 || d.Remaining != left {
				t.Errorf("%s: Peek after request %d, with the limiter's own capacity: %+v, %v", name, i, d, err)
			}
		}
		if d, err := w.Decide(ctx, core.Request{Key: "k", N: 2, Op: core.OpRefund, Params: five}); err != nil || d.Remaining != 2 || d.Limit != 5 {
			t.Errorf("%s: Refund of 2 with Params: %+v, %v", name, d, err)
		}
	}

	// denycache: a denial with one set of limits is not the answer for
	// another.
	dc, err := denycache.New(bucket(stores["scripts"], "dc2:"), denycache.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		dc.Decide(ctx, core.Request{Key: "k", N: 1, Params: one}) // allowed, then denied
	}
	// A raised capacity gives what the key did not use (4 of 5).
	if d, err := dc.Decide(ctx, core.Request{Key: "k", N: 1, Params: five}); err != nil || !d.Allowed || d.Remaining != 3 || dc.Hits() != 0 {
		t.Errorf("denycache: other limits after a cached denial: %+v, %v, %d hits; want allowed by the store under them", d, err, dc.Hits())
	}
	if d, err := dc.Decide(ctx, core.Request{Key: "k", N: 1, Params: one}); err != nil || d.Allowed || d.Limit != 1 || dc.Hits() != 1 {
		t.Errorf("denycache: the first limits again: %+v, %v, %d hits; want the cached denial", d, err, dc.Hits())
	}

	// failsafe: while the store is down, Local decides with the Params.
	down := &switchable{ScriptRunner: stores["scripts"]}
	fs := mustWrap(failsafe.New(failsafe.Config{Limiter: bucket(down, "down:"), Mode: failsafe.FailLocal, Local: bucket(stores["in process"], "local:"), Clock: clock}))
	down.down.Store(true)
	for i := range 6 {
		d, err := fs.Decide(ctx, core.Request{Key: "k", N: 1, Params: five})
		if err != nil || d.Allowed != (i < 5) || d.Limit != 5 {
			t.Errorf("failsafe, store down: request %d with a capacity of 5: %+v, %v", i, d, err)
		}
	}
}

// mustWrap panics on a wrapper's constructor error: the tests build them
// from valid limiters.
func mustWrap[L core.Limiter](l L, err error) core.Limiter {
	if err != nil {
		panic(err)
	}
	return l
}

// switchable is a store that fails while down.
type switchable struct {
	core.ScriptRunner
	down atomic.Bool
}

func (s *switchable) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if s.down.Load() {
		return nil, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return s.ScriptRunner.RunScript(ctx, sc, keys, args, reply)
}

// Limits of different keys, under one Key, decided at once: limit i
// counts at Key and Keys[i], a denied request counts nowhere, and a
// limit's count is shared by every request that gives it the same key.
func TestRequestKeys(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"in process", "scripts"} {
		t.Run(name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			store := paramsStores(t, clock)[name]
			bucket := func(prefix string, capacity int64) *ratekit.Limiter {
				l, err := tokenbucket.New(store, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix, Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			perIP, perUser := bucket("ip:", 2), bucket("user:", 3)
			p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "ip", Limiter: perIP}, {Name: "user", Limiter: perUser}}})
			if err != nil {
				t.Fatal(err)
			}
			req := func(ip, user string) core.Request {
				return core.Request{Key: "tenant", N: 1, Keys: []string{ip, user}}
			}
			for i, c := range []struct {
				r               core.Request
				allowed         bool
				ipLeft, usrLeft int64
			}{
				{req("10.0.0.1", "ann"), true, 1, 2},
				{req("10.0.0.1", "ann"), true, 0, 1},
				{req("10.0.0.1", "bob"), false, 0, 3}, // denied by ip: bob counted nothing
				{req("10.0.0.2", "ann"), true, 1, 0},
				{req("10.0.0.2", "ann"), false, 1, 0}, // denied by user: 10.0.0.2 counted nothing
			} {
				d, err := p.Decide(ctx, c.r)
				if err != nil || d.Allowed != c.allowed || d.Limits[0].Remaining != c.ipLeft || d.Limits[1].Remaining != c.usrLeft {
					t.Fatalf("request %d %v: %+v, %v; want allowed %v, %d and %d left", i, c.r.Keys, d, err, c.allowed, c.ipLeft, c.usrLeft)
				}
			}
			// A batch decides as one request after the other.
			res := p.AllowMany(ctx, []core.Request{req("10.0.0.3", "cid"), req("10.0.0.3", "cid"), req("10.0.0.3", "cid")})
			for i, want := range []bool{true, true, false} {
				if res[i].Err != nil || res[i].Decision.Allowed != want {
					t.Fatalf("batch request %d: %+v, %v; want allowed %v", i, res[i].Decision, res[i].Err, want)
				}
			}
			for _, c := range []struct {
				r    core.Request
				want error
			}{
				{core.Request{Key: "tenant", N: 1, Keys: []string{"one"}}, core.ErrInvalidConfig},
				{core.Request{Key: "tenant", N: 1, Keys: []string{"a", strings.Repeat("b", core.MaxKeyLen+1)}}, core.ErrInvalidKey},
				{core.Request{Key: "", N: 1, Keys: []string{"a", "b"}}, core.ErrInvalidKey},
			} {
				if _, err := p.Decide(ctx, c.r); !errors.Is(err, c.want) {
					t.Errorf("Keys %.20q: %v, want %v", c.r.Keys, err, c.want)
				}
			}
		})
	}
}

// A keyed policy's limits may share a prefix: a counter keeps one storage
// key whichever place it takes, every request gives Keys, and two limits
// of one prefix never count at one key in a request.
func TestKeyedPolicy(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"in process", "scripts"} {
		t.Run(name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			store := paramsStores(t, clock)[name]
			window, err := fixedwindow.New(store, fixedwindow.Config{Limit: 2, Window: time.Hour, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "a", Limiter: window}, {Name: "b", Limiter: window}}}); !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("two limits of one prefix, not keyed: %v", err)
			}
			if _, err := ratekit.NewPolicy(ratekit.PolicyConfig{Keyed: true, Limits: []ratekit.Limit{{Name: "a", Limiter: window, Penalty: time.Second}}}); !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("a keyed policy with a penalty: %v", err)
			}
			var policies [3]*ratekit.Limiter
			for n := 1; n <= 3; n++ {
				limits := make([]ratekit.Limit, n)
				for i := range limits {
					limits[i] = ratekit.Limit{Name: fmt.Sprint("d", i), Limiter: window}
				}
				if policies[n-1], err = ratekit.NewPolicy(ratekit.PolicyConfig{Keyed: true, Limits: limits}); err != nil {
					t.Fatal(err)
				}
			}
			// "x" counts at one place whatever its position and policy.
			for i, c := range []struct {
				keys    []string
				allowed bool
			}{
				{[]string{"x"}, true},
				{[]string{"y", "x"}, true},       // x: 2 of 2
				{[]string{"z", "w", "x"}, false}, // x is full: z and w count nothing
				{[]string{"z", "w"}, true},
			} {
				d, err := policies[len(c.keys)-1].Decide(ctx, core.Request{Key: "dom", N: 1, Keys: c.keys})
				if err != nil || d.Allowed != c.allowed {
					t.Fatalf("request %d %v: %+v, %v; want allowed %v", i, c.keys, d, err, c.allowed)
				}
			}
			d, err := policies[0].Decide(ctx, core.Request{Key: "dom", N: 1, Op: core.OpPeek, Keys: []string{"z"}})
			if err != nil || d.Remaining != 1 {
				t.Fatalf("z after one counted request: %+v, %v", d, err)
			}
			if _, err := policies[1].Decide(ctx, core.Request{Key: "dom", N: 1, Keys: []string{"q", "q"}}); !errors.Is(err, core.ErrInvalidKey) {
				t.Errorf("one key twice: %v, want ErrInvalidKey", err)
			}
			if _, err := policies[0].Allow(ctx, "dom"); !errors.Is(err, core.ErrInvalidConfig) {
				t.Errorf("a request without Keys: %v, want ErrInvalidConfig", err)
			}
			if res := policies[0].AllowMany(ctx, []core.Request{{Key: "dom", N: 1}}); !errors.Is(res[0].Err, core.ErrInvalidConfig) {
				t.Errorf("a batched request without Keys: %v, want ErrInvalidConfig", res[0].Err)
			}
		})
	}
}
