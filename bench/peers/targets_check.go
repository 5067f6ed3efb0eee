package main

import (
	"fmt"
	"strings"
)

// targets states each of the targets with its measured value.
func (r *results) targets(o options) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	g := o.goroutines[len(o.goroutines)-1]
	tb := func(s string) caseKey { return caseKey{s, "tokenbucket", "open", g} }
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	w("## Targets (at %d goroutines unless said)\n\n| target | measured | |\n|---|---|---|\n", g)
	if r.has(tb("ratekit/rueidis")) && len(r.ceilings["tokenbucket"]) > 0 {
		v := r.ceilingRatio(tb("ratekit/rueidis"), "tokenbucket")
		w("| rueidis token bucket >= 0.8x its script's -P16 ceiling | %.2fx | %s |\n", v, mark(v >= 0.8))
	}
	if r.has(tb("ratekit/rueidis")) && r.has(tb("redis_rate")) {
		v := r.ratio(tb("ratekit/rueidis"), tb("redis_rate"))
		w("| rueidis token bucket >= 3x redis_rate | %.2fx | %s |\n", v, mark(v >= 3))
	}
	for _, st := range []string{"goredis", "goredis-auto"} {
		if r.has(tb("ratekit/"+st)) && r.has(tb("redis_rate")) {
			v := r.ratio(tb("ratekit/"+st), tb("redis_rate"))
			w("| %s token bucket >= 2.5x redis_rate | %.2fx | %s |\n", st, v, mark(v >= 2.5))
		}
	}
	allocs := func(k caseKey) float64 {
		return median(field(r.samples[k], func(s sample) float64 { return s.allocs }))
	}
	if r.has(tb("ratekit/rueidis")) {
		v := allocs(tb("ratekit/rueidis"))
		w("| rueidis allocations per decision <= 4 | %.1f | %s |\n", v, mark(v <= 4))
	}
	for _, st := range []string{"goredis", "goredis-auto"} {
		if r.has(tb("ratekit/" + st)) {
			v := allocs(tb("ratekit/" + st))
			w("| %s allocations per decision <= 8 | %.1f | %s |\n", st, v, mark(v <= 8))
		}
	}
	if seed := r.ceilings["seed tokenbucket"]; len(seed) > 0 {
		s := median(field2(seed, func(c ceiling) float64 { return c.p16 }))
		for _, a := range algos {
			if cs := r.ceilings[a.name]; len(cs) > 0 {
				v := median(field2(cs, func(c ceiling) float64 { return c.p16 }))
				w("| %s script's -P16 ceiling >= the seed token bucket's | %.2fx | %s |\n", a.name, v/s, mark(v >= 0.95*s))
			}
		}
	}
	m1 := caseKey{"ratekit/memory", "tokenbucket", "open", 1}
	if r.has(m1) {
		m, _, _ := r.ops(m1)
		ns := 1e9 / m
		w("| memory store Allow <= 80 ns/op, 1 goroutine | %.0f ns/op | %s |\n", ns, mark(ns <= 80))
		w("| memory store 0 allocs/op | %.1f | %s |\n", allocs(m1), mark(allocs(m1) < 0.05))
		for _, p := range []string{"x/time/rate", "sethvargo"} {
			for _, gg := range []int{1, g} {
				mk, pk := caseKey{"ratekit/memory", "tokenbucket", "open", gg}, caseKey{p, "tokenbucket", "open", gg}
				if r.has(mk) && r.has(pk) {
					v := r.ratio(mk, pk)
					w("| memory store >= 1.5x %s, %d goroutines | %.2fx | %s |\n", p, gg, v, mark(v >= 1.5))
				}
			}
		}
	}
	return b.String()
}
