package memory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// embedder embeds the store, and with it Lock (core.LocalStore): limiters
// decide on it in process, around its RunScript.
type embedder struct {
	*memory.Store
	scripts int
}

func (e *embedder) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	e.scripts++
	return e.Store.RunScript(ctx, s, keys, args, reply)
}

// The store decides in process (core.LocalStore), and so does a wrapper
// that embeds it and with it Lock; a wrapper that holds it in a named
// field (recorder), or hides it behind core.ScriptRunner, sees every
// decision as a script call (core/store.go).
func TestInProcessOnlyWithLock(t *testing.T) {
	s := newStore(t)
	var _ core.LocalStore = s
	var _ core.LocalStore = &embedder{}
	for _, w := range []core.ScriptRunner{&recorder{s: s}, scriptsOnly{s}} {
		if _, ok := w.(core.LocalStore); ok {
			t.Errorf("%T is a core.LocalStore: decided in process", w)
		}
	}
	ctx := context.Background()
	calls := func(r core.ScriptRunner) {
		t.Helper()
		lim, err := gcra.New(r, gcra.Config{Rate: 10, Period: time.Second, Burst: 10})
		if err != nil {
			t.Fatal(err)
		}
		lim.Allow(ctx, "a")
		lim.Peek(ctx, "a")
		lim.Refund(ctx, "a", 1)
		lim.AllowAtMost(ctx, "a", 3)
		lim.AllowMany(ctx, []core.Request{{Key: "a", N: 1}, {Key: "b", N: 1}})
	}
	rec := &recorder{s: s}
	calls(rec)
	// AllowMany sends one call per key: the store is not one node.
	if len(rec.keys) != 6 {
		t.Fatalf("the wrapper saw %d of 6 calls", len(rec.keys))
	}
	emb := &embedder{Store: s}
	calls(emb)
	if emb.scripts != 0 {
		t.Fatalf("limiters sent %d scripts to a wrapper that embeds the store: not decided in process", emb.scripts)
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

// Limiters of more prefixes than a shard's tx keeps the hashes of, some
// of them prefixes of one string (one address, other lengths), decide on
// one key in turn, in process and through the script: each counts its
// own key, whichever path decides it.
func TestPathsShareStateManyPrefixes(t *testing.T) {
	s := newStore(t, memory.WithSweepInterval(0))
	base := "many:prefixes:of:one:string:"
	prefixes := []string{base[:5], base[:14], base[:17], base, "other:", "more:", "last:"}
	var direct, scripted []core.Limiter
	for _, p := range prefixes {
		cfg := tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour, Prefix: p}
		d, err := tokenbucket.New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := tokenbucket.New(scriptsOnly{s}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		direct, scripted = append(direct, d), append(scripted, sc)
	}
	ctx := context.Background()
	for round := range 4 {
		for i := range prefixes {
			l := direct[i]
			if (round+i)%2 == 1 {
				l = scripted[i]
			}
			d, err := l.Allow(ctx, "alice")
			if want := int64(99 - round); err != nil || d.Remaining != want {
				t.Fatalf("round %d, prefix %q: %+v, %v; want %d remaining", round, prefixes[i], d, err, want)
			}
		}
	}
	if n := s.Len(); n != len(prefixes) {
		t.Fatalf("%d keys stored, want %d", n, len(prefixes))
	}
}

// steps that misbehave: one panics, one writes a state with no time to
// live. Each fails the call, in process as through the script, with an
// error wrapping core.ErrStore that says what went wrong, and the store
// goes on.
var (
	panics = engine.NewSpec(engine.Spec{
		Name: "panics", Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
		Lua: "local function panics(key, now, client_clock, n, mode, x) error('x') end",
		Step: func(core.Tx, string, engine.Call, engine.Args) (engine.Reply, engine.State) {
			panic("the step's bug")
		},
	})
	noTTL = engine.NewSpec(engine.Spec{
		Name: "nottl", Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
		Lua: "local function nottl(key, now, client_clock, n, mode, x) return 1, 0, 0, 0 end",
		Step: func(core.Tx, string, engine.Call, engine.Args) (engine.Reply, engine.State) {
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
		for _, r := range []core.ScriptRunner{s, scriptsOnly{s}} {
			l, err := spec.Limit("fail:", "", 5, []int64{1})
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.New(engine.Config{Store: r, Limits: []engine.Limit{l}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Decide(ctx, "k", 1, engine.ModeAllow)
			what := map[*engine.Spec]string{panics: "the step's bug", noTTL: "Put with a non-positive TTL"}[spec]
			if !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), what) {
				t.Fatalf("%s on %T: %v, want an error wrapping core.ErrStore that says %q", spec.Name, r, err, what)
			}
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
					if prm.Kind == algorithms.Choice {
						p[prm.Name] = 0
					}
				}
				if a.Name == "slidinglog" && open {
					p["limit"] = 10000
				}
				l, err := a.New(s, p, clock, prefix+a.Name+":")
				if err != nil {
					t.Fatal(err)
				}
				checkAllocs(t, a.Name, open, l)
			}
			cal, err := fixedwindow.NewCalendar(s, fixedwindow.CalendarConfig{Limit: map[bool]int64{true: 1 << 20, false: 1}[open], Period: fixedwindow.Day, Prefix: prefix + "cal:"})
			if err != nil {
				t.Fatal(err)
			}
			checkAllocs(t, "calendar", open, cal)
		}
	}
}

func checkAllocs(t *testing.T, name string, open bool, l core.Limiter) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		l.Allow(ctx, "user:1")
	}
	calls := map[string]func(){
		"Peek":   func() { l.Peek(ctx, "user:1") },
		"Refund": func() { l.Refund(ctx, "user:1", 1) },
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

// locker embeds the store, and so decides in process; it records the user
// keys limiters lock and counts the scripts they send.
type locker struct {
	*memory.Store
	locked  []string
	scripts int
}

func (l *locker) Lock(key, prefix string) (core.Tx, string, error) {
	l.locked = append(l.locked, strings.Clone(key))
	return l.Store.Lock(key, prefix)
}

func (l *locker) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	l.scripts++
	return l.Store.RunScript(ctx, s, keys, args, reply)
}

// A policy on the store decides in process, as one limiter does: every
// call locks the request's user key (every limit's key and the penalty
// key are in its shard) and sends no script, Reset, AllowMany and a
// coalescing policy included; and it decides as the composed script's
// twin does, penalty and shadow limits included.
func TestPolicyInProcess(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	policy := func(r core.ScriptRunner) *ratekit.Limiter {
		t.Helper()
		tb, err := tokenbucket.New(r, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: "pol:tb:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		fw, err := fixedwindow.New(r, fixedwindow.Config{Limit: 4, Window: 10 * time.Second, Prefix: "pol:fw:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		g, err := gcra.New(r, gcra.Config{Rate: 1, Period: time.Second, Burst: 2, Prefix: "pol:gcra:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
			{Name: "second", Limiter: tb},
			{Name: "window", Limiter: fw, Penalty: 5 * time.Second},
			{Name: "trial", Limiter: g, Shadow: true},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lk := &locker{Store: newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))}
	local := policy(lk)
	scripted := policy(scriptsOnly{newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))})
	coalesced, err := ratekit.Coalesce(local)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type result struct {
		d   core.Decision
		err error
	}
	const key = "we{ird}"
	steps := []func(p *ratekit.Limiter) []result{
		func(p *ratekit.Limiter) []result { d, err := p.AllowN(ctx, key, 2); return []result{{d, err}} },
		func(p *ratekit.Limiter) []result { d, err := p.Peek(ctx, key); return []result{{d, err}} },
		func(p *ratekit.Limiter) []result {
			var out []result
			for _, r := range p.AllowMany(ctx, []core.Request{{Key: key, N: 1}, {Key: "other", N: 1}, {Key: key, N: 1}}) {
				out = append(out, result{r.Decision, r.Err})
			}
			return out
		},
		// The window's fifth unit: denied, and a penalty block.
		func(p *ratekit.Limiter) []result { d, err := p.AllowN(ctx, key, 1); return []result{{d, err}} },
		func(p *ratekit.Limiter) []result { d, err := p.Refund(ctx, key, 1); return []result{{d, err}} },
		func(p *ratekit.Limiter) []result {
			if p == local {
				p = coalesced
			}
			d, err := p.AllowN(ctx, key, 1)
			return []result{{d, err}}
		},
		func(p *ratekit.Limiter) []result { return []result{{err: p.Reset(ctx, key)}} },
		func(p *ratekit.Limiter) []result { d, err := p.Allow(ctx, key); return []result{{d, err}} },
	}
	for i, step := range steps {
		clock.Advance(100 * time.Millisecond)
		got, want := step(local), step(scripted)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: in process %+v\n  through the script %+v", i, got, want)
		}
		// The steps reach what they are written for: a block, a refund
		// that does not lift it, and none after Reset.
		if blocked := i >= 3 && i <= 5; got[0].err != nil || got[0].d.Blocked != blocked {
			t.Errorf("step %d: %+v, want Blocked %v", i, got[0], blocked)
		}
	}
	// One lock per request, on its user key; no script.
	want := []string{key, key, key, "other", key, key, key, key, key, key}
	if !slices.Equal(lk.locked, want) || lk.scripts != 0 {
		t.Errorf("locked %q and sent %d scripts; want %q locked and none sent", lk.locked, lk.scripts, want)
	}
}

// The keys of one call that Key returns (a policy's) are found again by
// every Get, Put and Del of the call, new or known, deleted and written
// again, as a script would find them; past the keys the Tx remembers,
// and for a copy of a key's string, too.
func TestLockKeysOfOneCall(t *testing.T) {
	s := newStore(t, memory.WithSweepInterval(0))
	prefixes := []string{"a:", "b:", "c:", "d:", "e:", "f:"}
	for round := range 3 {
		tx, first, err := s.Lock("user", prefixes[0])
		if err != nil {
			t.Fatal(err)
		}
		keys := []string{first}
		for _, p := range prefixes[1:] {
			keys = append(keys, s.Key(tx, p))
		}
		for i, k := range keys {
			if want := prefixes[i] + "{user}"; k != want {
				t.Fatalf("round %d: key %d is %q, want %q", round, i, k, want)
			}
			v, ok := tx.Get(k)
			if round == 0 && ok {
				t.Fatalf("round 0: %q exists before any Put", k)
			}
			if round > 0 && (!ok || len(v) != 1 || v[0] != int64(10*round+i)) {
				t.Fatalf("round %d: Get(%q) = %v, %v; want [%d]", round, k, v, ok, 10*round+i)
			}
		}
		// Delete every other key, then write every key (by a copy of its
		// string for the odd ones): each lands on its own entry.
		for i := 0; i < len(keys); i += 2 {
			if round > 0 && !tx.Del(keys[i]) {
				t.Fatalf("round %d: Del(%q) found nothing", round, keys[i])
			}
		}
		for i, k := range keys {
			if i%2 == 1 {
				k = strings.Clone(k)
			}
			tx.Put(k, 1, time.Hour)[0] = int64(10*(round+1) + i)
		}
		for i, k := range keys {
			if v, ok := tx.Get(k); !ok || v[0] != int64(10*(round+1)+i) {
				t.Fatalf("round %d: after Put, Get(%q) = %v, %v", round, k, v, ok)
			}
		}
		if err := s.Unlock(tx); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(); n != len(prefixes) {
		t.Errorf("the store holds %d keys, want %d", n, len(prefixes))
	}
}
