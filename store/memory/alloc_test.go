package memory_test

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A decision on a key the store already holds allocates nothing, in
// process and through the script: there the limiter lends the store its
// key and argument buffers (keys are the caller's only during the call,
// and the store copies those it keeps) and the twin appends to the
// caller's reply buffer.
func TestDecisionsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newStore(t, memory.WithSweepInterval(0))
	ctx := context.Background()
	runners := []core.ScriptRunner{s, scriptsOnly{s}}
	if raceEnabled {
		runners = runners[:1] // the script path's frames come from a pool
	}
	for _, r := range runners {
		tb, _ := tokenbucket.New(r, tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second})
		g, _ := gcra.New(r, gcra.Config{Rate: 1 << 20, Period: time.Second, Burst: 1 << 20})
		for name, l := range map[string]core.Limiter{"tokenbucket": tb, "gcra": g} {
			for _, k := range []string{"user:1", "we{ird}"} {
				l.Allow(ctx, k)
				if n := testing.AllocsPerRun(1000, func() { l.Allow(ctx, k) }); n != 0 {
					t.Errorf("%s on %T: Allow(%q) allocates %v times per call", name, r, k, n)
				}
			}
		}
	}
}

// Every algorithm's allowed decision on a known key allocates nothing: the
// fixed-size states live inside the store's entries, and the sliding log
// builds its next log in memory the store lends for the call
// (engine.Scratch) and grows its stored log by half again when it must.
func TestAllowedDecisionsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newStore(t, memory.WithSweepInterval(0))
	ctx := context.Background()
	for _, a := range algorithms.All {
		p := algorithms.Params{}
		for _, prm := range a.Params {
			switch prm.Kind {
			case algorithms.Duration:
				p[prm.Name] = int64(time.Minute)
			case algorithms.Choice:
				p[prm.Name] = prm.Default
			default:
				p[prm.Name] = 1 << 20
			}
		}
		if a.Name == "slidinglog" {
			p["limit"] = 10000
		}
		l, err := a.New(s, p, nil, "alloc:"+a.Name+":")
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		for i := 0; i < 100; i++ {
			l.Allow(ctx, "user:1")
		}
		n := testing.AllocsPerRun(1000, func() {
			if d, err := l.Allow(ctx, "user:1"); err != nil || !d.Allowed {
				t.Fatalf("%s: %+v, %v", a.Name, d, err)
			}
		})
		// The sliding log's stored array grows by half again when full:
		// about log2(1100/100) times over these 1000 decisions.
		if limit := map[bool]float64{true: 0.01, false: 0}[a.Name == "slidinglog"]; n > limit {
			t.Errorf("%s: an allowed Allow allocates %v times per call", a.Name, n)
		}
	}
}

// A decision in process allocates nothing even when no buffer waits in a
// pool: right after a garbage collection, which empties sync.Pools (and
// under the race detector, which drops some of what a pool is given).
func TestInProcessNeedsNoPool(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newStore(t, memory.WithSweepInterval(0))
	ctx := context.Background()
	g, err := gcra.New(s, gcra.Config{Rate: 1 << 20, Period: time.Second, Burst: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(){
		"Allow":       func() { g.Allow(ctx, "user:1") },
		"Peek":        func() { g.Peek(ctx, "user:1") },
		"Refund":      func() { g.Refund(ctx, "user:1", 1) },
		"AllowAtMost": func() { g.AllowAtMost(ctx, "user:1", 2) },
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for what, f := range calls {
		f()
		// The fewest of a few tries: a goroutine of the runtime's may
		// allocate meanwhile, now and then; a pool emptied by the GC
		// costs its buffers every time.
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC() // a pool's victim cache lasts one collection
			runtime.ReadMemStats(&before)
			f()
			runtime.ReadMemStats(&after)
			least = min(least, after.Mallocs-before.Mallocs)
		}
		if least != 0 {
			t.Errorf("%s after a GC: %d allocations", what, least)
		}
	}
}
