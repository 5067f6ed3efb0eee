package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/denycache"
)

// sample is one case measured once.
type sample struct {
	ops      float64 // decisions per second
	p50, p99 time.Duration
	allocs   float64 // per decision, whole process
	bytes    float64
	denied   float64 // fraction
	errors   int64
}

// caseKey names a case: a series (store or peer), an algorithm, a
// workload ("open" or "deny90") and a concurrency.
type caseKey struct {
	series, algo, workload string
	g                      int
}

// numKeys is how many keys a case spreads its requests over.
const numKeys = 10000

// measure runs decide from g goroutines, over keys, until a window of d
// that opens after a warm-up of d/8 closes, or until ctx ends; it returns
// once every goroutine has. Each call of decide makes per decisions (a
// batch); latencies are per call.
//
// Only the calls that return inside the window count, and throughput is
// per the window's length: the goroutines run from before it opens until
// after it closes, so neither their start (each finding its pace, a
// coalescing limiter its first batches) nor the calls still in flight at
// the end weigh on a case. Counting every call from the goroutines' start
// to the last one's return read a coalescing limiter at 256 goroutines
// about 9% low in a pair's slices of 50 ms (against slices of 250 ms),
// while the case beside it in a target ran 400 ms at a stretch.
func measure(ctx context.Context, decide decideFunc, g, per int, d time.Duration, keys []string) sample {
	// The warm-up (connections, scripts, the first touch of each key)
	// brings copies of the keys: a limiter that keeps the string of a
	// key's first request (x/time/rate in a sync.Map, sethvargo's map)
	// then compares later requests' strings byte by byte, as in a server,
	// where every request brings a string of its own; with the very
	// strings it stored it would compare pointers.
	warmKeys := make([]string, len(keys))
	for i, k := range keys {
		warmKeys[i] = strings.Clone(k)
	}
	var ops, denied, errs atomic.Int64
	lats := make([][]time.Duration, g)
	runtime.GC()
	start := time.Now().Add(d / 8)
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			lat := make([]time.Duration, 0, 4096)
			var n, den, e int64
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				ks := keys
				if t0.Before(start) {
					ks = warmKeys
				}
				ok, err := decide(ctx, ks[r.IntN(len(ks))])
				el := time.Since(t0) // the monotonic clock alone: half of time.Now
				if t1 := t0.Add(el); t1.Before(start) || !t1.Before(deadline) {
					continue
				}
				if len(lat) < cap(lat) {
					lat = append(lat, el)
				} else {
					lat[n%int64(len(lat))] = el
				}
				n++
				if err != nil {
					e++
				} else if !ok {
					den++
				}
			}
			lats[w] = lat
			ops.Add(n)
			denied.Add(den)
			errs.Add(e)
		}()
	}
	// Allocations are counted from the window's opening to its close;
	// reading them stops the world for a moment, in every case alike.
	var before, after runtime.MemStats
	sleepUntil(ctx, start)
	runtime.ReadMemStats(&before)
	sleepUntil(ctx, deadline)
	runtime.ReadMemStats(&after)
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	n := float64(ops.Load()) * float64(per)
	s := sample{
		ops:    n / d.Seconds(),
		allocs: float64(after.Mallocs-before.Mallocs) / n,
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / n,
		denied: float64(denied.Load()) / n,
		errors: errs.Load(),
	}
	if len(all) > 0 {
		s.p50 = all[len(all)/2]
		s.p99 = all[len(all)*99/100]
	}
	return s
}

// sleepUntil returns at t, or when ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// results holds every sample of every round.
type results struct {
	samples  map[caseKey][]sample
	rounds   [][]caseKey // the order cases ran in, per round
	ceilings map[string][]ceiling
	env      environment
	elapsed  time.Duration
	// The CPU usage of each round (cases only) and of each
	// redis-benchmark measurement, and the run's conditions (load.go).
	roundLoad, ceilingLoad []usage
	cond                   conditions
}

// job is one case ready to run: built once, measured every round.
type job struct {
	key    caseKey
	decide decideFunc
	per    int // decisions per call of decide
	// beside, when set, is the case this one runs next to in every round
	// (in either order), because a target compares the two.
	beside caseKey
}

// measureUnit measures a unit's jobs for d each. The jobs of a unit run
// in turn, forth and back (A B C C B A), pairCycles times, each for
// d/(2*pairCycles), and each job's sample is the mean of its slices: a
// drift of the machine during the unit falls on all of them alike.
func measureUnit(ctx context.Context, jobs []job, unit []int, d time.Duration, keys []string) []sample {
	if len(unit) == 1 {
		jb := jobs[unit[0]]
		return []sample{measure(ctx, jb.decide, jb.key.g, jb.per, d, keys)}
	}
	slice := d / (2 * pairCycles)
	parts := make([][]sample, len(unit))
	run := func(i int) {
		jb := jobs[unit[i]]
		parts[i] = append(parts[i], measure(ctx, jb.decide, jb.key.g, jb.per, slice, keys))
	}
	for range pairCycles {
		for i := range unit {
			run(i)
		}
		for i := len(unit) - 1; i >= 0; i-- {
			run(i)
		}
	}
	out := make([]sample, len(unit))
	for i, s := range parts {
		out[i] = meanSample(s)
	}
	return out
}

// pairCycles is how many times a unit of several jobs runs forth and
// back in a round: at one goroutine a call's latency drifts over tens of
// milliseconds here, so the jobs alternate more often than once.
const pairCycles = 4

// meanSample is the mean of samples of one case of equal durations.
func meanSample(s []sample) sample {
	var m sample
	for _, x := range s {
		m.ops += x.ops
		m.p50 += x.p50
		m.p99 += x.p99
		m.allocs += x.allocs
		m.bytes += x.bytes
		m.denied += x.denied
		m.errors += x.errors
	}
	n := float64(len(s))
	m.ops, m.allocs, m.bytes, m.denied = m.ops/n, m.allocs/n, m.bytes/n, m.denied/n
	m.p50, m.p99 = m.p50/time.Duration(len(s)), m.p99/time.Duration(len(s))
	return m
}

// inProcessUnit is the case that the memory store's algorithms and the
// in-process peers (inProcessPeers) run beside, at g goroutines: the
// memory store's token bucket. Its unit then holds every case that
// decides in process, each read against the peers (issue 33, item 3)
// within one unit, where a drift of the machine falls on all alike.
func inProcessUnit(g int) caseKey { return caseKey{"ratekit/memory", "tokenbucket", "open", g} }

// units groups jobs (by index) into what a round shuffles: the jobs
// joined by beside, each to the job it names, run together in one unit;
// every other job alone. A unit's jobs keep the order of jobs.
func units(jobs []job) [][]int {
	at := map[caseKey]int{}
	for i, j := range jobs {
		at[j.key] = i
	}
	// root follows beside to the first job of the chain.
	root := func(i int) int {
		for seen := 0; seen < len(jobs); seen++ {
			p, ok := at[jobs[i].beside]
			if jobs[i].beside == (caseKey{}) || !ok || p == i {
				break
			}
			i = p
		}
		return i
	}
	group := map[int]int{} // a root's unit in out
	var out [][]int
	for i := range jobs {
		r := root(i)
		g, ok := group[r]
		if !ok {
			g = len(out)
			group[r] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// runAll measures every case o selects on t, round after round. When ctx
// ends it stops and returns ctx's error, but only once every goroutine
// and every client it started has stopped writing.
func runAll(ctx context.Context, o options, t *target, m *meter) (*results, error) {
	keys := make([]string, o.keys)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	res := &results{samples: map[caseKey][]sample{}, ceilings: map[string][]ceiling{}}
	var jobs []job
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for _, st := range storeNames {
		if !want(o.stores, st) {
			continue
		}
		runner, closeFn, err := openStore(st, t)
		if errors.Is(err, errNoCluster) {
			log.Printf("store %s: skipped, its client has no cluster mode", st)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", st, err)
		}
		closers = append(closers, closeFn)
		for _, a := range algos {
			if !want(o.algorithms, a.name) {
				continue
			}
			prefix := fmt.Sprintf("%sbench:%s:%s:", t.prefix, st, a.name)
			open, err := a.open(runner, prefix+"open:")
			if err != nil {
				return nil, err
			}
			for _, g := range o.goroutines {
				jb := job{key: caseKey{"ratekit/" + st, a.name, "open", g}, decide: allowFunc(open), per: 1}
				if st == "memory" && a.name != "tokenbucket" {
					jb.beside = inProcessUnit(g) // read against the in-process peers
				}
				jobs = append(jobs, jb)
			}
			if a.name == "tokenbucket" {
				cj, err := coalesceJobs(st, open, o.goroutines)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, cj...)
				pol, err := policyFunc(runner, prefix+"policy:")
				if err != nil {
					return nil, err
				}
				// The policy, Params and rules cases are read as ratios to
				// the open limiter (and rules to Params): measured in one
				// unit with it, a drift of the machine falls on all alike.
				for _, g := range o.goroutines {
					jobs = append(jobs, job{key: caseKey{"ratekit/" + st, a.name, "policy2", g}, decide: pol, per: 1,
						beside: caseKey{"ratekit/" + st, a.name, "open", g}})
				}
				given, err := paramsFunc(open)
				if err != nil {
					return nil, err
				}
				ru, err := rulesFunc(runner, prefix+"rules:")
				if err != nil {
					return nil, err
				}
				for _, g := range o.goroutines {
					params := caseKey{"ratekit/" + st, a.name, "params", g}
					jobs = append(jobs, job{key: params, decide: given, per: 1, beside: caseKey{"ratekit/" + st, a.name, "open", g}},
						job{key: caseKey{"ratekit/" + st, a.name, "rules", g}, decide: ru, per: 1, beside: params})
				}
				b, err := batchFunc(open, keys, batchSize)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, job{key: caseKey{"ratekit/" + st, a.name, "batch", 1}, decide: b, per: batchSize})
			}
			if a.name == "gcra" && o.hotKey {
				hk, err := hotKeyJobs(open, st, o.goroutines)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, hk.jobs...)
				closers = append(closers, hk.close)
			}
			tight, err := a.tight(runner, prefix+"tight:")
			if err != nil {
				return nil, err
			}
			d90, err := deny90(ctx, open, tight, keys)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", st, a.name, err)
			}
			jobs = append(jobs, job{key: caseKey{"ratekit/" + st, a.name, "deny90", 64}, decide: d90, per: 1})
			if o.denyCache && a.name == "tokenbucket" {
				cached, err := denycache.New(tight)
				if err != nil {
					return nil, err
				}
				dc, err := deny90(ctx, open, cached, keys)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, job{key: caseKey{"ratekit/" + st + "+denycache", a.name, "deny90", 64}, decide: dc, per: 1})
			}
		}
	}
	if o.peers {
		for _, p := range peerNames {
			decide, closeFn, err := openPeer(p, t)
			if err != nil {
				return nil, fmt.Errorf("peer %s: %w", p, err)
			}
			closers = append(closers, closeFn)
			for _, g := range o.goroutines {
				jb := job{key: caseKey{p, "tokenbucket", "open", g}, decide: decide, per: 1}
				if slices.Contains(inProcessPeers, p) {
					jb.beside = inProcessUnit(g)
				}
				jobs = append(jobs, jb)
			}
		}
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("nothing to measure: no store of -stores on this target, and -peers=false")
	}
	for r := 0; r < o.rounds; r++ {
		// Interleave: every round runs every case once, in a fresh order,
		// so that a noisy moment hurts one sample of many cases rather
		// than every sample of one.
		var ran []caseKey
		roundStart := m.sample()
		us := units(jobs)
		for i, u := range rand.Perm(len(us)) {
			unit := us[u]
			if rand.IntN(2) == 0 {
				unit = slices.Clone(unit)
				slices.Reverse(unit)
			}
			samples := measureUnit(ctx, jobs, unit, o.duration, keys)
			if err := ctx.Err(); err != nil {
				return nil, err // samples cut short
			}
			for j, s := range samples {
				jb := jobs[unit[j]]
				res.samples[jb.key] = append(res.samples[jb.key], s)
				ran = append(ran, jb.key)
				if s.errors > 0 {
					log.Printf("round %d: %v: %d errors", r+1, jb.key, s.errors)
				}
			}
			if i%50 == 0 {
				log.Printf("round %d/%d: %d/%d units", r+1, o.rounds, i, len(us))
			}
		}
		res.rounds = append(res.rounds, ran)
		res.roundLoad = append(res.roundLoad, between(roundStart, m.sample()))
		log.Printf("round %d: %v", r+1, res.roundLoad[len(res.roundLoad)-1])
		if o.ceilings {
			if err := measureCeilings(ctx, t, o, res, m); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}
