package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// Only the store itself is decided on in process: a wrapper, whether it
// embeds the store (and so its methods) or hides it behind the
// core.ScriptRunner interface, sees every decision as a script call.
func TestInProcessOnlyForTheStore(t *testing.T) {
	s := newStore(t)
	if engine.InProcess(s) == nil {
		t.Fatal("the memory store is not used in process")
	}
	for _, w := range []core.ScriptRunner{&recorder{Store: s}, scriptsOnly{s}} {
		if engine.InProcess(w) != nil {
			t.Errorf("%T is bypassed: decided in process", w)
		}
	}
	rec := &recorder{Store: s}
	lim, err := gcra.New(rec, gcra.Config{Rate: 10, Period: time.Second, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lim.Allow(ctx, "a")
	lim.Peek(ctx, "a")
	lim.Refund(ctx, "a", 1)
	lim.AllowAtMost(ctx, "a", 3)
	if len(rec.keys) != 4 {
		t.Fatalf("the wrapper saw %d of 4 calls", len(rec.keys))
	}
}

// A limiter deciding in process and one deciding through scripts, on one
// store and one prefix, count on the same state, whatever the key: plain,
// with bytes to escape, or longer than the buffer the in-process path
// builds keys in.
func TestPathsShareState(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))
	cfg := tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour, Prefix: "share:"}
	direct, err := tokenbucket.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	scripted, err := tokenbucket.New(scriptsOnly{s}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"alice", "we{ird}%7B", strings.Repeat("k", 200), strings.Repeat("{", 100)} {
		want := int64(100)
		for i := 0; i < 6; i++ {
			l := map[bool]core.Limiter{true: direct, false: scripted}[i%2 == 0]
			d, err := l.Allow(ctx, key)
			if want--; err != nil || d.Remaining != want {
				t.Fatalf("call %d on %.20q: %+v, %v; want %d remaining", i, key, d, err, want)
			}
		}
	}
	if n := s.Len(); n != 4 {
		t.Fatalf("%d keys stored, want 4", n)
	}
}

// steps that misbehave: one panics, one writes a state with no time to
// live. Each fails the call, in process as through the script, with the
// same error, and the store goes on.
var (
	panics = engine.NewSpec(engine.Spec{
		Name: "panics", Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
		Lua: "local function panics(key, now, client_clock, n, mode, x) error('x') end",
		Step: func(core.Tx, string, engine.Call, []int64) (engine.Reply, engine.State) {
			panic("the step's bug")
		},
	})
	noTTL = engine.NewSpec(engine.Spec{
		Name: "nottl", Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
		Lua: "local function nottl(key, now, client_clock, n, mode, x) return 1, 0, 0, 0 end",
		Step: func(core.Tx, string, engine.Call, []int64) (engine.Reply, engine.State) {
			var st engine.State
			st.Set(0, 1)
			return engine.Reply{1, 0, 0, 0}, st
		},
	})
)

func TestInProcessFailuresAsScripts(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, spec := range []*engine.Spec{panics, noTTL} {
		var errs [2]error
		for i, r := range []core.ScriptRunner{s, scriptsOnly{s}} {
			e, err := engine.New(r, nil, "", "fail:", 5, spec, []int64{1})
			if err != nil {
				t.Fatal(err)
			}
			_, errs[i] = e.Decide(ctx, "k", 1, engine.ModeAllow)
			if !errors.Is(errs[i], core.ErrStore) {
				t.Fatalf("%s: %v, want an error wrapping core.ErrStore", spec.Name, errs[i])
			}
		}
		if errs[0].Error() != errs[1].Error() {
			t.Errorf("%s: in process %q, through the script %q", spec.Name, errs[0], errs[1])
		}
	}
	// The key's shard was unlocked.
	lim, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second, Prefix: "fail:"})
	if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("after the failures: %+v, %v", d, err)
	}
}

// On the in-process path no decision of any algorithm allocates: allowed
// and denied, Allow, Peek and Refund, on the store's clock and on the
// limiter's, a calendar window (whose parameters are set per call)
// included. The sliding log's allowed Allow allocates only when its
// stored log grows (by half again).
func TestInProcessDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newStore(t, memory.WithSweepInterval(0))
	if engine.InProcess(s) == nil {
		t.Fatal("not in process")
	}
	type refunder interface {
		Refund(ctx context.Context, key string, n int64) (core.Decision, error)
	}
	for ci, clock := range []core.Clock{nil, core.ClockFunc(time.Now)} {
		for _, open := range []bool{true, false} {
			prefix := fmt.Sprintf("allocs:%d:%v:", ci, open)
			for _, a := range algorithms.All {
				p := algorithms.Params{}
				for _, prm := range a.Params {
					p[prm.Name] = 1 // denies all but the first
					if open {
						p[prm.Name] = 1 << 20
					}
					if prm.Kind == algorithms.Duration {
						p[prm.Name] = int64(time.Hour)
						if open {
							p[prm.Name] = int64(time.Minute)
						}
					}
				}
				if a.Name == "slidinglog" && open {
					p["limit"] = 10000
				}
				l, err := a.New(s, p, clock, prefix+a.Name+":")
				if err != nil {
					t.Fatal(err)
				}
				checkAllocs(t, a.Name, open, l, l.(refunder))
			}
			cal, err := fixedwindow.NewCalendar(s, fixedwindow.CalendarConfig{Limit: map[bool]int64{true: 1 << 20, false: 1}[open], Period: fixedwindow.Day, Prefix: prefix + "cal:"})
			if err != nil {
				t.Fatal(err)
			}
			checkAllocs(t, "calendar", open, cal, cal)
		}
	}
}

func checkAllocs(t *testing.T, name string, open bool, l core.Limiter, r interface {
	Refund(ctx context.Context, key string, n int64) (core.Decision, error)
}) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		l.Allow(ctx, "user:1")
	}
	calls := map[string]func(){
		"Peek":   func() { l.Peek(ctx, "user:1") },
		"Refund": func() { r.Refund(ctx, "user:1", 1) },
		"Allow": func() {
			if d, err := l.Allow(ctx, "user:1"); err != nil || d.Allowed != open {
				t.Fatalf("%s: %+v, %v; want allowed %v", name, d, err, open)
			}
		},
	}
	for what, f := range calls {
		if what == "Refund" && !open {
			continue // it would let the next Allow pass
		}
		limit := 0.0
		if name == "slidinglog" && what == "Allow" && open {
			// Its stored array grows by half again when full: about
			// log2(1100/100) times over these 1000 decisions.
			limit = 0.01
		}
		if n := testing.AllocsPerRun(1000, f); n > limit {
			t.Errorf("%s (open %v): %s allocates %v times per call", name, open, what, n)
		}
	}
}
