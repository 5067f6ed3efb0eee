package main

import (
	"fmt"
	"strings"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// The coalescing mode (ratekit.Coalesce): the token bucket's open limiter
// of each Redis store again, its concurrent calls gathered into batch
// script calls, at every concurrency, beside the plain limiter in the same
// rounds.

// coalesced names a store's coalescing series.
func coalesced(store string) string { return "ratekit/" + store + "+coalesce" }

// coalesceJobs returns the coalescing cases of a Redis store's open token
// bucket, none for the memory store (in process there is no call to save).
func coalesceJobs(store string, open core.Limiter, goroutines []int) ([]job, error) {
	if store == "memory" {
		return nil, nil
	}
	l, ok := open.(*ratekit.Limiter)
	if !ok {
		return nil, fmt.Errorf("coalesce: %T is not a *ratekit.Limiter", open)
	}
	c, err := ratekit.Coalesce(l)
	if err != nil {
		return nil, fmt.Errorf("coalesce: %w", err)
	}
	var jobs []job
	for _, g := range goroutines {
		jobs = append(jobs, job{key: caseKey{coalesced(store), "tokenbucket", "open", g}, decide: allowFunc(c), per: 1,
			// Its targets are ratios to the plain limiter: measured next
			// to it, a drift within a round falls on both.
			beside: caseKey{"ratekit/" + store, "tokenbucket", "open", g}})
	}
	return jobs, nil
}

// coalesceSection is RESULTS.md's table of the coalescing mode against
// the plain limiter, store by store and concurrency by concurrency.
func (r *results) coalesceSection(o options) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	rows := 0
	for _, st := range storeNames {
		for _, g := range o.goroutines {
			ck, pk := caseKey{coalesced(st), "tokenbucket", "open", g}, caseKey{"ratekit/" + st, "tokenbucket", "open", g}
			if !r.has(ck) || !r.has(pk) {
				continue
			}
			if rows == 0 {
				w("\n## Coalescing: concurrent calls gathered into batch scripts (`ratekit.Coalesce`), token bucket, nothing denied\n\n")
				w("The same limiter, plain and through `ratekit.Coalesce`, in the same rounds. A call goes alone while fewer than %d of its group are in flight (`engine.MaxInFlight`); those that come meanwhile go together in the next batch. On one server every key shares one group; on a cluster (`-cluster`) only calls on one key share a script call, so random keys gain nothing there.\n\n", engine.MaxInFlight)
				w("| store | goroutines | coalescing | plain | ratio | p99 coalescing | p99 plain | of the script's -P16 ceiling |\n|---|---|---|---|---|---|---|---|\n")
			}
			rows++
			cm, _, _ := r.ops(ck)
			pm, _, _ := r.ops(pk)
			frac := "–"
			if len(r.ceilings["tokenbucket"]) > 0 {
				frac = fmt.Sprintf("%.2f", r.ceilingRatio(ck, "tokenbucket"))
			}
			w("| %s | %d | %s | %s | %.2fx | %s | %s | %s |\n", st, g, human(cm), human(pm), r.ratio(ck, pk), dur(r.p99(ck)), dur(r.p99(pk)), frac)
		}
	}
	return b.String()
}

// p99 is the median over rounds of a case's p99 latency.
func (r *results) p99(k caseKey) float64 {
	return median(field(r.samples[k], func(s sample) float64 { return float64(s.p99) }))
}

// coalesceTargets writes issue 14's targets for the coalescing mode on
// rueidis: at the most goroutines, 1.3x the script's -P16 ceiling, 3x
// redis_rate and a p99 no worse than the plain limiter's; at 1 goroutine,
// within 5% of the plain limiter.
func (r *results) coalesceTargets(o options, w func(string, ...any), mark func(bool) string) {
	g := o.goroutines[len(o.goroutines)-1]
	ck := caseKey{coalesced("rueidis"), "tokenbucket", "open", g}
	pk := caseKey{"ratekit/rueidis", "tokenbucket", "open", g}
	if !r.has(ck) {
		return
	}
	if len(r.ceilings["tokenbucket"]) > 0 {
		v := r.ceilingRatio(ck, "tokenbucket")
		w("| rueidis coalescing, %d goroutines, >= 1.3x the token bucket's -P16 ceiling (issue 14) | %.2fx | %s |\n", g, v, mark(v >= 1.3))
	}
	if rr := (caseKey{"redis_rate", "tokenbucket", "open", g}); r.has(rr) {
		v := r.ratio(ck, rr)
		w("| rueidis coalescing, %d goroutines, >= 3x redis_rate (issue 14) | %.2fx | %s |\n", g, v, mark(v >= 3))
	}
	if r.has(pk) {
		c, p := r.p99(ck), r.p99(pk)
		w("| rueidis coalescing, %d goroutines, p99 no worse than plain (issue 14) | %s against %s | %s |\n", g, dur(c), dur(p), mark(c <= p))
	}
	c1, p1 := caseKey{coalesced("rueidis"), "tokenbucket", "open", 1}, caseKey{"ratekit/rueidis", "tokenbucket", "open", 1}
	if r.has(c1) && r.has(p1) {
		v := r.ratio(c1, p1)
		w("| rueidis coalescing, 1 goroutine, at least 0.95x plain (issue 14: within 5%%) | %.2fx | %s |\n", v, mark(v >= 0.95))
	}
}
