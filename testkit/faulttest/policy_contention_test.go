package faulttest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// deniedBy returns the names of the enforced limits that denied a
// policy's request.
func deniedBy(d core.Decision) []string {
	var names []string
	for _, l := range d.Limits {
		if !l.Allowed && !l.Shadow {
			names = append(names, l.Name)
		}
	}
	return names
}

// TestPolicyContention: a policy of two limits on one key (every
// algorithm as the tight one, the next in the registry as the loose one),
// 64 goroutines over 3 clients of different kinds (go-redis, rueidis,
// redigo) on one redis-server, and on the memory store: exactly the tight
// limit's count is allowed, and the loose limit counted exactly the
// allowed requests, none of the denied ones.
func TestPolicyContention(t *testing.T) {
	const (
		goroutines = 64
		tight      = 60
		loose      = 500
	)
	perG := max(requestsPerGoroutine(t)/4, 10)
	frozen := core.ClockFunc(func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) })
	srv := redistest.Start(t)
	setups := map[string][]adapter{
		"memory":                 {memoryAdapter(t)},
		"goredis+rueidis+redigo": adapters[:3],
	}
	for setup, clients := range setups {
		for i, tightAlg := range algorithms.All {
			looseAlg := algorithms.All[(i+1)%len(algorithms.All)]
			t.Run(fmt.Sprintf("%s/%s+%s", setup, tightAlg.Name, looseAlg.Name), func(t *testing.T) {
				prefix := fmt.Sprintf("pcontention:%d:", time.Now().UnixNano())
				policies := make([]*ratekit.Limiter, len(clients))
				var looseLims []*ratekit.Limiter
				for c, a := range clients {
					store := a.open(t, srv.Addr)
					tl, err := tightAlg.New(store, limitParams(tightAlg, tight, 1, time.Hour), frozen, prefix+"t:")
					if err != nil {
						t.Fatal(err)
					}
					ll, err := looseAlg.New(store, limitParams(looseAlg, loose, 1, time.Hour), frozen, prefix+"l:")
					if err != nil {
						t.Fatal(err)
					}
					looseLims = append(looseLims, ll)
					policies[c], err = ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
						{Name: "tight", Limiter: tl},
						{Name: "loose", Limiter: looseLims[c]},
					}})
					if err != nil {
						t.Fatal(err)
					}
				}
				var allowed, errs atomic.Int64
				var firstErr atomic.Value
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						p := policies[g%len(policies)]
						for i := 0; i < perG; i++ {
							d, err := p.Allow(context.Background(), "hot")
							if err != nil {
								errs.Add(1)
								firstErr.CompareAndSwap(nil, err)
								continue
							}
							if d.Allowed {
								allowed.Add(1)
							} else if denied := deniedBy(d); len(denied) != 1 || denied[0] != "tight" {
								errs.Add(1)
								firstErr.CompareAndSwap(nil, fmt.Errorf("denied by %v", denied))
							}
						}
					}()
				}
				wg.Wait()
				if errs.Load() != 0 {
					t.Fatalf("%d errors, first: %v", errs.Load(), firstErr.Load())
				}
				if got := allowed.Load(); got != tight {
					t.Fatalf("%d of %d requests allowed; the tight limit is %d", got, goroutines*perG, tight)
				}
				d, err := looseLims[0].Peek(context.Background(), "hot")
				if err != nil {
					t.Fatal(err)
				}
				if d.Remaining != loose-tight {
					t.Fatalf("the loose limit has %d left of %d after %d allowed requests; want %d", d.Remaining, loose, tight, loose-tight)
				}
			})
		}
	}
}

// TestPolicyDenialWritesNothing: on a real redis-server, a request a
// policy denies leaves every limit's key as it was (DUMP, PTTL, DBSIZE,
// the server's write count), whichever algorithms deny and allow; with a
// penalty, the only write is the block.
func TestPolicyDenialWritesNothing(t *testing.T) {
	s := startDenialServer(t)
	ctx := context.Background()
	for i, tightAlg := range algorithms.All {
		looseAlg := algorithms.All[(i+1)%len(algorithms.All)]
		t.Run(tightAlg.Name+"+"+looseAlg.Name, func(t *testing.T) {
			prefix := fmt.Sprintf("pdenial:%d:", time.Now().UnixNano())
			tl, err := tightAlg.New(s.store, limitParams(tightAlg, 3, 1, 24*time.Hour), nil, prefix+"t:")
			if err != nil {
				t.Fatal(err)
			}
			ll, err := looseAlg.New(s.store, limitParams(looseAlg, 50, 1, 24*time.Hour), nil, prefix+"l:")
			if err != nil {
				t.Fatal(err)
			}
			limits := []ratekit.Limit{{Name: "tight", Limiter: tl}, {Name: "loose", Limiter: ll}}
			p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: limits})
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n < 3; n++ {
				if d, err := p.Allow(ctx, "k"); err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v, %v", n, d, err)
				}
			}
			keys := []string{prefix + "t:{k}", prefix + "l:{k}"}
			before := []keyState{s.state(t, keys[0]), s.state(t, keys[1])}
			d, err := p.Allow(ctx, "k")
			if err != nil || d.Allowed {
				t.Fatalf("fourth request: %+v, %v; want denied", d, err)
			}
			for k, key := range keys {
				unchanged(t, "a denied policy request, key "+key, before[k], s.state(t, key))
			}

			// With a penalty: the block is the one write.
			limits[0].Penalty = time.Hour
			pp, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: limits, PenaltyPrefix: prefix + "penalty:"})
			if err != nil {
				t.Fatal(err)
			}
			// A script's function library is loaded at its first call, and
			// FUNCTION LOAD counts as a write: a Peek, which writes no key,
			// loads it first.
			if _, err := pp.Peek(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			before = []keyState{s.state(t, keys[0]), s.state(t, keys[1])}
			if d, err := pp.Allow(ctx, "k"); err != nil || d.Allowed || !d.Blocked {
				t.Fatalf("with a penalty: %+v, %v; want denied and blocked", d, err)
			}
			for k, key := range keys {
				after := s.state(t, key)
				if after.dump != before[k].dump || after.dbsize != before[k].dbsize+1 || after.changes != before[k].changes+1 {
					t.Errorf("with a penalty, key %s: before %v, after %v; want only the block written", key, before[k], after)
				}
			}
			if n, err := s.rdb.Exists(ctx, prefix+"penalty:{k}").Result(); err != nil || n != 1 {
				t.Errorf("the penalty block: EXISTS %d, %v", n, err)
			}
		})
	}
}
