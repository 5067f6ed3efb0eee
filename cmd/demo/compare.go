package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// The side-by-side view: one traffic pattern driven through every
// algorithm at its registry defaults, on the memory store and a simulated
// clock, so that the same pattern always gives the same decisions and 30
// seconds of traffic take a few milliseconds.

const (
	// compareSpan is how long every pattern runs, in simulated time.
	compareSpan = 30 * time.Second
	// compareBin is the interval decisions are counted over.
	compareBin = time.Second
	// compareWindow is the rolling window peaks are counted over: the
	// window of the registry's defaults, which all allow about 5 per
	// 10 s (TestCompareWindowIsTheDefaults keeps them together).
	compareWindow = 10 * time.Second
)

// compareStart is the simulated clock's start: a whole multiple of
// compareWindow since the Unix epoch, so that windows aligned to the
// epoch (the sliding counter's) and windows that open at the first
// request (the fixed window's) both turn over at 10 s.
var compareStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pattern is a traffic pattern for the side-by-side view: bursts of
// requests of cost 1, each burst at one instant of simulated time.
type pattern struct {
	Name   string  `json:"name"`
	Title  string  `json:"title"`
	Doc    string  `json:"doc"`
	bursts []burst // in time order, within compareSpan
}

// burst is n requests of cost 1, all at the instant at (from the
// pattern's start).
type burst struct {
	at time.Duration
	n  int
}

// patterns are the patterns the page offers, in its order.
var patterns = []pattern{
	{
		Name: "steady", Title: "Steady",
		Doc:    "one request a second for 30 s: twice the rate the defaults sustain",
		bursts: steady(time.Second, 1),
	},
	{
		Name: "burst", Title: "Bursts",
		Doc:    "bursts of 10 requests at 0 s, 5 s, 12 s and 25 s",
		bursts: []burst{{0, 10}, {5 * time.Second, 10}, {12 * time.Second, 10}, {25 * time.Second, 10}},
	},
	{
		Name: "boundary", Title: "Burst at a window boundary",
		Doc:    "one request at 0 s, then bursts of 10 at 9.9 s and 10.1 s, either side of the window's end at 10 s",
		bursts: []burst{{0, 1}, {9900 * time.Millisecond, 10}, {10100 * time.Millisecond, 10}},
	},
}

// steady is n requests every period over compareSpan.
func steady(period time.Duration, n int) []burst {
	var out []burst
	for at := time.Duration(0); at < compareSpan; at += period {
		out = append(out, burst{at, n})
	}
	return out
}

func findPattern(name string) (pattern, error) {
	var names []string
	for _, p := range patterns {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	if name == "" {
		return pattern{}, fmt.Errorf("query parameter pattern is missing: one of %s", strings.Join(names, ", "))
	}
	return pattern{}, fmt.Errorf("unknown pattern %q: one of %s", name, strings.Join(names, ", "))
}

// comparison is one pattern driven through every algorithm, as
// GET /api/compare answers it. Every series has one value per bin.
type comparison struct {
	Pattern  pattern `json:"pattern"`
	BinMS    int64   `json:"bin_ms"`
	WindowMS int64   `json:"window_ms"`
	// T is each bin's start, in seconds from the pattern's start.
	T []float64 `json:"t"`
	// Sent is the requests the pattern sends in each bin.
	Sent       []int    `json:"sent"`
	Algorithms []result `json:"algorithms"`
}

// result is what one algorithm decided for a pattern.
type result struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Doc   string `json:"doc"`
	// State says what Remaining counts.
	State string `json:"state"`
	Limit int64  `json:"limit"`
	// Params are the registry's defaults the algorithm ran with, in its
	// order, by the page's names (durations in ms).
	Params []paramValue `json:"params"`
	// Allowed and Denied count the decisions in each bin.
	Allowed []int `json:"allowed"`
	Denied  []int `json:"denied"`
	// Remaining is the key's level after the bin's last request, or, in a
	// bin without requests, at the bin's end (a Peek).
	Remaining    []int64 `json:"remaining"`
	TotalAllowed int     `json:"total_allowed"`
	TotalDenied  int     `json:"total_denied"`
	// Peak is the most requests allowed in any rolling compareWindow.
	Peak int `json:"peak"`
}

// compare drives p through each of algos, each on its own memory store and
// simulated clock.
func compare(ctx context.Context, p pattern, algos []algorithm) (comparison, error) {
	bins := int(compareSpan / compareBin)
	c := comparison{Pattern: p, BinMS: compareBin.Milliseconds(), WindowMS: compareWindow.Milliseconds(), T: make([]float64, bins), Sent: make([]int, bins)}
	for i := range bins {
		c.T[i] = (time.Duration(i) * compareBin).Seconds()
	}
	for _, b := range p.bursts {
		c.Sent[int(b.at/compareBin)] += b.n
	}
	for _, a := range algos {
		r, err := simulate(ctx, p, a, bins)
		if err != nil {
			return comparison{}, fmt.Errorf("%s: %w", a.Name, err)
		}
		c.Algorithms = append(c.Algorithms, r)
	}
	return c, nil
}

// paramValue is one parameter's value.
type paramValue struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// simulate drives p through a at its defaults.
func simulate(ctx context.Context, p pattern, a algorithm, bins int) (result, error) {
	clock := fakeclock.New(compareStart)
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		return result{}, err
	}
	defer store.Close()
	params := a.defaults()
	lim, err := a.build(store, "ratekit:compare:", params, clock)
	if err != nil {
		return result{}, err
	}
	// The limit is a count, whose name on the page is the registry's.
	r := result{
		Name: a.Name, Title: a.Title, Doc: a.reg.Doc, State: a.State, Limit: params[a.reg.Limit().Name],
		Allowed: make([]int, bins), Denied: make([]int, bins), Remaining: make([]int64, bins),
	}
	for _, prm := range a.Params {
		r.Params = append(r.Params, paramValue{prm.Name, params[prm.Name]})
	}
	const key = "pattern"
	var allowedAt []time.Duration
	next := 0 // the next burst
	for i := range bins {
		end := time.Duration(i+1) * compareBin
		decided := false
		for ; next < len(p.bursts) && p.bursts[next].at < end; next++ {
			b := p.bursts[next]
			clock.Set(compareStart.Add(b.at))
			for range b.n {
				d, err := lim.Allow(ctx, key)
				if err != nil {
					return result{}, err
				}
				if d.Allowed {
					r.Allowed[i]++
					allowedAt = append(allowedAt, b.at)
				} else {
					r.Denied[i]++
				}
				r.Remaining[i], decided = d.Remaining, true
			}
		}
		if !decided {
			clock.Set(compareStart.Add(end))
			d, err := lim.Peek(ctx, key)
			if err != nil {
				return result{}, err
			}
			r.Remaining[i] = d.Remaining
		}
		r.TotalAllowed += r.Allowed[i]
		r.TotalDenied += r.Denied[i]
	}
	r.Peak = peak(allowedAt, compareWindow)
	return r, nil
}

// peak returns the most instants of at (in order) that fall in any window
// (t-w, t].
func peak(at []time.Duration, w time.Duration) int {
	best, lo := 0, 0
	for hi, t := range at {
		for at[lo] <= t-w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}
