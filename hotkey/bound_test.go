package hotkey_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/limitertest"
)

// limit is a shared limit for the bound test: how to build it, and B(L),
// the most it grants over any closed interval of L µs, times den (so that
// GCRA's Rate/Period stays in integers).
type limit struct {
	desc  string
	build func(r core.ScriptRunner, clock core.Clock) (core.Limiter, error)
	most  func(l int64) (units, den int64) // B(l) = units/den
}

func drawLimit(t *rapid.T) limit {
	periods := []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second}
	if rapid.Bool().Draw(t, "gcra") {
		cfg := gcra.Config{
			Rate:   rapid.Int64Range(1, 5).Draw(t, "rate"),
			Period: rapid.SampledFrom(periods).Draw(t, "period"),
			Burst:  rapid.Int64Range(1, 10).Draw(t, "burst"),
		}
		per := int64(cfg.Period / time.Microsecond)
		return limit{
			desc: fmt.Sprintf("gcra rate=%d period=%v burst=%d", cfg.Rate, cfg.Period, cfg.Burst),
			build: func(r core.ScriptRunner, clock core.Clock) (core.Limiter, error) {
				c := cfg
				c.Clock = clock
				return gcra.New(r, c)
			},
			// Burst + l x Rate/Period.
			most: func(l int64) (int64, int64) { return cfg.Burst*per + cfg.Rate*l, per },
		}
	}
	cfg := tokenbucket.Config{
		Capacity:       rapid.Int64Range(1, 10).Draw(t, "capacity"),
		RefillRate:     rapid.Int64Range(1, 5).Draw(t, "refill"),
		RefillInterval: rapid.SampledFrom(periods).Draw(t, "interval"),
	}
	interval := int64(cfg.RefillInterval / time.Microsecond)
	return limit{
		desc: fmt.Sprintf("tokenbucket capacity=%d refill=%d per %v", cfg.Capacity, cfg.RefillRate, cfg.RefillInterval),
		build: func(r core.ScriptRunner, clock core.Clock) (core.Limiter, error) {
			c := cfg
			c.Clock = clock
			return tokenbucket.New(r, c)
		},
		// Capacity + RefillRate x ceil(l / RefillInterval).
		most: func(l int64) (int64, int64) {
			return cfg.Capacity + cfg.RefillRate*params.CeilDiv(l, interval), 1
		},
	}
}

type admitted struct {
	at, cost int64 // µs since T0
}

// TestOverAdmissionBound checks the package doc's bound on random
// histories: processes (Budgets, each with its own leases) share one key
// of one limit, on one store and one clock. After every allowed request,
// for every window [a, b] that ends at it, the requests allowed in it are
// at most B(b - a + TTL) plus the units given back by Close from a - TTL on;
// and from the key's first request on, at most B(b - a), with no TTL term:
// in total nothing is over-admitted. The units each Budget reports (Stats)
// are exactly those it allowed.
func TestOverAdmissionBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lim := drawLimit(t)
		procs := rapid.IntRange(1, 4).Draw(t, "processes")
		lease := rapid.Int64Range(1, 12).Draw(t, "lease")
		cfg := hotkey.Config{
			Lease:    lease,
			MinLease: rapid.OneOf(rapid.Just(lease), rapid.Int64Range(1, lease)).Draw(t, "minLease"),
			TTL:      rapid.SampledFrom([]time.Duration{time.Millisecond, 30 * time.Millisecond, 250 * time.Millisecond, time.Second}).Draw(t, "ttl"),
		}
		ttl := int64(cfg.TTL / time.Microsecond)
		clock := fakeclock.New(limitertest.T0)
		store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		src, err := lim.build(store, clock)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clock = clock
		budgets := make([]*hotkey.Budget, procs)
		allowedBy := make([]int64, procs)
		for i := range budgets {
			if budgets[i], err = hotkey.New(src, cfg); err != nil {
				t.Fatal(err)
			}
		}
		now := func() int64 { return int64(clock.Now().Sub(limitertest.T0) / time.Microsecond) }
		var history []admitted
		first := int64(-1)    // when the first request was made
		var closes []admitted // units given back by Close, and when
		maxCost := min(lease+2, 30)
		desc := fmt.Sprintf("%s, %d processes, %+v", lim.desc, procs, cfg)

		check := func(t *rapid.T) {
			last := history[len(history)-1]
			var sum int64
			for i := len(history) - 1; i >= 0; i-- {
				a := history[i].at
				sum += history[i].cost
				var back int64
				for _, c := range closes {
					if c.at >= a-ttl {
						back += c.cost
					}
				}
				units, den := lim.most(last.at - a + ttl)
				if sum*den > units+back*den {
					t.Fatalf("%s: %d allowed in [%d, %d] µs, more than B(%d µs + TTL) = %d/%d plus %d given back", desc, sum, a, last.at, last.at-a, units, den, back)
				}
			}
			if units, den := lim.most(last.at - first); sum*den > units {
				t.Fatalf("%s: %d allowed since the first request at %d µs, more than B(%d µs) = %d/%d", desc, sum, first, last.at-first, units, den)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"allow": func(t *rapid.T) {
				i := rapid.IntRange(0, procs-1).Draw(t, "process")
				n := rapid.Int64Range(1, maxCost).Draw(t, "n")
				if first < 0 {
					first = now()
				}
				d, err := budgets[i].AllowN(ctx, "hot", n)
				if err != nil {
					return // a cost above the limit
				}
				if d.Allowed {
					allowedBy[i] += n
					history = append(history, admitted{at: now(), cost: n})
					check(t)
				}
			},
			"burst": func(t *rapid.T) {
				i := rapid.IntRange(0, procs-1).Draw(t, "process")
				if first < 0 {
					first = now()
				}
				for range rapid.IntRange(1, 50).Draw(t, "requests") {
					if d, err := budgets[i].Allow(ctx, "hot"); err == nil && d.Allowed {
						allowedBy[i]++
						history = append(history, admitted{at: now(), cost: 1})
					}
				}
				if len(history) > 0 {
					check(t)
				}
			},
			"each": func(t *rapid.T) {
				if first < 0 {
					first = now()
				}
				for i, b := range budgets {
					if d, err := b.Allow(ctx, "hot"); err == nil && d.Allowed {
						allowedBy[i]++
						history = append(history, admitted{at: now(), cost: 1})
					}
				}
				if len(history) > 0 {
					check(t)
				}
			},
			"advance": func(t *rapid.T) {
				us := rapid.OneOf(
					rapid.Int64Range(0, 3),
					rapid.Int64Range(0, ttl),
					rapid.SampledFrom([]int64{ttl - 1, ttl, ttl + 1, 2 * ttl, 5 * ttl}),
					rapid.Int64Range(0, 2_000_000),
				).Draw(t, "µs")
				clock.Advance(time.Duration(max(us, 0)) * time.Microsecond)
			},
			"close": func(t *rapid.T) {
				i := rapid.IntRange(0, procs-1).Draw(t, "process")
				before := budgets[i].Stats().Refunded
				if err := budgets[i].Close(ctx); err != nil {
					t.Fatal(err)
				}
				if back := budgets[i].Stats().Refunded - before; back > 0 {
					closes = append(closes, admitted{at: now(), cost: back})
				}
			},
			"": func(t *rapid.T) {
				for i, b := range budgets {
					st := b.Stats()
					if got := st.Granted - st.Refunded - st.Lost - st.Held + st.Direct; got != allowedBy[i] {
						t.Fatalf("%s: process %d: Stats %+v account for %d units, it allowed %d", desc, i, st, got, allowedBy[i])
					}
				}
			},
		})
	})
}
