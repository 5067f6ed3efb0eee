package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	registry "github.com/ratekit/ratekit/algorithms"
)

// getCompare returns GET /api/compare?pattern=name, decoded, and its body.
func getCompare(t *testing.T, ts *testServer, name string) (comparison, []byte) {
	t.Helper()
	resp, err := http.Get(ts.URL + "/api/compare?pattern=" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("compare %s: %s %s", name, resp.Status, body)
	}
	var c comparison
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return c, body
}

// TestCompareAPI: every pattern the page is offered runs through every
// algorithm of the registry, in its order, at its defaults; every request
// is decided once, in the bin it was sent in; and the same pattern gives
// the same answer, byte for byte.
func TestCompareAPI(t *testing.T) {
	ts := newTestServer(t)
	_, meta := call(t, "GET", ts.URL+"/api/patterns", nil, nil)
	var names []string
	for _, p := range meta["patterns"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"steady", "burst", "boundary"}) || meta["bin_ms"] != 1000.0 || meta["window_ms"] != 10000.0 || meta["span_ms"] != 30000.0 {
		t.Fatalf("GET /api/patterns: %v", meta)
	}
	for _, name := range names {
		c, body := getCompare(t, ts, name)
		p, err := findPattern(name)
		if err != nil {
			t.Fatal(err)
		}
		bins := 30
		sent := 0
		for _, b := range p.bursts {
			sent += b.n
		}
		if len(c.T) != bins || len(c.Sent) != bins || c.T[1] != 1 || sum(c.Sent) != sent || c.Pattern.Name != name {
			t.Fatalf("%s: %d bins, %d sent (pattern: %d), t[1] = %v", name, len(c.T), sum(c.Sent), sent, c.T[1])
		}
		if len(c.Algorithms) != len(registry.All) {
			t.Fatalf("%s: %d algorithms, the registry has %d", name, len(c.Algorithms), len(registry.All))
		}
		for i, r := range c.Algorithms {
			a := registry.All[i]
			if r.Name != a.Name || r.Title != a.Title || r.Limit != a.Limit().Default || r.State != a.Remaining {
				t.Errorf("%s: algorithm %d is %s (%q, limit %d), want the registry's %s at its defaults", name, i, r.Name, r.Title, r.Limit, a.Name)
			}
			var ps, defaults []string
			for _, p := range r.Params {
				ps = append(ps, fmt.Sprintf("%s=%d", p.Name, p.Value))
			}
			for _, p := range algorithms[i].Params {
				defaults = append(defaults, fmt.Sprintf("%s=%d", p.Name, p.Default))
			}
			if !slices.Equal(ps, defaults) {
				t.Errorf("%s/%s: ran with %v, want the defaults in order, %v", name, r.Name, ps, defaults)
			}
			if len(r.Allowed) != bins || len(r.Denied) != bins || len(r.Remaining) != bins {
				t.Fatalf("%s/%s: series of %d, %d, %d values, want %d each", name, r.Name, len(r.Allowed), len(r.Denied), len(r.Remaining), bins)
			}
			for b := range bins {
				if r.Allowed[b]+r.Denied[b] != c.Sent[b] {
					t.Errorf("%s/%s: bin %d: %d allowed + %d denied, %d sent", name, r.Name, b, r.Allowed[b], r.Denied[b], c.Sent[b])
				}
				if r.Remaining[b] < 0 || r.Remaining[b] > r.Limit {
					t.Errorf("%s/%s: bin %d: remaining %d, outside 0..%d", name, r.Name, b, r.Remaining[b], r.Limit)
				}
			}
			if r.TotalAllowed != sum(r.Allowed) || r.TotalDenied != sum(r.Denied) || r.Peak < 1 || r.Peak > r.TotalAllowed {
				t.Errorf("%s/%s: totals %d and %d, peak %d, for series summing to %d and %d", name, r.Name, r.TotalAllowed, r.TotalDenied, r.Peak, sum(r.Allowed), sum(r.Denied))
			}
		}
		if _, again := getCompare(t, ts, name); !bytes.Equal(body, again) {
			t.Errorf("%s: two runs differ:\n%s\n%s", name, body, again)
		}
	}
}

// TestCompareShowsTheTable: what docs/algorithms.md's table says can be
// seen in the side-by-side view.
func TestCompareShowsTheTable(t *testing.T) {
	ts := newTestServer(t)
	runs := map[string]map[string]result{}
	for _, p := range patterns {
		c, _ := getCompare(t, ts, p.Name)
		runs[p.Name] = map[string]result{}
		for _, r := range c.Algorithms {
			runs[p.Name][r.Name] = r
		}
	}
	bin := func(at time.Duration) int { return int(at / compareBin) }

	// Every algorithm takes a first burst of 10 up to its limit (5).
	for name, r := range runs["burst"] {
		if r.Allowed[0] != int(r.Limit) {
			t.Errorf("burst/%s: %d of the first 10 allowed, want its limit %d", name, r.Allowed[0], r.Limit)
		}
	}
	// Sliding log, "never more than Limit in any Window".
	for _, p := range patterns {
		if r := runs[p.Name]["slidinglog"]; r.Peak > int(r.Limit) {
			t.Errorf("%s/slidinglog: %d allowed in a rolling window, over its limit %d", p.Name, r.Peak, r.Limit)
		}
	}
	// Fixed window, "up to 2 x Limit across a window boundary": 4 just
	// before it (one went at 0 s) and 5 just after, 9 in 0.2 s.
	fw := runs["boundary"]["fixedwindow"]
	if fw.Allowed[bin(9900*time.Millisecond)] != 4 || fw.Allowed[bin(10100*time.Millisecond)] != 5 || fw.Peak != 2*int(fw.Limit)-1 {
		t.Errorf("boundary/fixedwindow: %d before the boundary, %d after, peak %d; want 4, 5 and 9",
			fw.Allowed[bin(9900*time.Millisecond)], fw.Allowed[bin(10100*time.Millisecond)], fw.Peak)
	}
	// Sliding counter, "smoothed boundaries": fewer than 2 x Limit in any
	// window, and after the boundary far fewer than the fixed window.
	for _, p := range patterns {
		if r := runs[p.Name]["slidingcounter"]; r.Peak >= 2*int(r.Limit) {
			t.Errorf("%s/slidingcounter: %d allowed in a rolling window, 2 x its limit %d", p.Name, r.Peak, r.Limit)
		}
	}
	if sc := runs["boundary"]["slidingcounter"]; sc.Allowed[bin(10100*time.Millisecond)] >= fw.Allowed[bin(10100*time.Millisecond)] || sc.Peak >= fw.Peak {
		t.Errorf("boundary: the sliding counter allowed %d after the boundary (peak %d), the fixed window %d (peak %d)",
			sc.Allowed[bin(10100*time.Millisecond)], sc.Peak, fw.Allowed[bin(10100*time.Millisecond)], fw.Peak)
	}
	// The buckets and GCRA refill as time passes: 5 s after the first
	// burst they allow some of the second, where the windows allow none.
	for name, r := range runs["burst"] {
		got := r.Allowed[bin(5*time.Second)]
		switch name {
		case "tokenbucket", "leakybucket", "gcra":
			if got == 0 {
				t.Errorf("burst/%s: nothing allowed 5 s after the first burst; it refills", name)
			}
		case "fixedwindow", "slidinglog", "slidingcounter":
			if got != 0 {
				t.Errorf("burst/%s: %d allowed 5 s after the first burst, in the same window", name, got)
			}
		}
	}
}

// TestCompareWindowIsTheDefaults: the window peaks are counted over is the
// registry's default window, so that a peak compares with a limit.
func TestCompareWindowIsTheDefaults(t *testing.T) {
	n := 0
	for _, a := range registry.All {
		if p, ok := a.Param("window"); ok {
			n++
			if time.Duration(p.Default) != compareWindow {
				t.Errorf("%s: default window %v, the side-by-side view counts peaks over %v", a.Name, time.Duration(p.Default), compareWindow)
			}
		}
	}
	if n == 0 {
		t.Fatal("no algorithm of the registry has a window")
	}
}

// TestCompareQuery: /api/compare takes one pattern, by name.
func TestCompareQuery(t *testing.T) {
	ts := newTestServer(t)
	for _, c := range []struct{ what, query, want string }{
		{"no pattern", "", "pattern is missing: one of steady, burst, boundary"},
		{"an empty pattern", "?pattern=", "pattern is missing"},
		{"an unknown pattern", "?pattern=chaos", `unknown pattern "chaos": one of steady, burst, boundary`},
		{"two patterns", "?pattern=steady&pattern=burst", `"pattern": given 2 times`},
		{"another parameter", "?pattern=steady&algorithm=gcra", `"algorithm": this path takes only pattern`},
	} {
		resp, v := call(t, "GET", ts.URL+"/api/compare"+c.query, nil, nil)
		wantJSONError(t, c.what, resp, v, http.StatusBadRequest, c.want)
	}
	resp, v := call(t, "GET", ts.URL+"/api/patterns?pattern=steady", nil, nil)
	wantJSONError(t, "patterns with a query", resp, v, http.StatusBadRequest, "this path takes none")
}

func TestPeak(t *testing.T) {
	s := time.Second
	for _, tt := range []struct {
		give []time.Duration
		want int
	}{
		{nil, 0},
		{[]time.Duration{0}, 1},
		{[]time.Duration{0, 0, 0}, 3},
		{[]time.Duration{0, 10 * s}, 1}, // the window is (t-10 s, t]
		{[]time.Duration{0, 10*s - 1}, 2},
		{[]time.Duration{0, 9 * s, 9 * s, 10 * s, 11 * s, 30 * s}, 4},
		{[]time.Duration{0, 20 * s, 21 * s, 22 * s}, 3},
	} {
		if got := peak(tt.give, 10*s); got != tt.want {
			t.Errorf("peak(%v, 10s) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestCompareEnded: a request that ends mid-simulation gets an error
// naming the algorithm, not a partial comparison.
func TestCompareEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := findPattern("steady")
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare(ctx, p, algorithms)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), algorithms[0].Name+": ") || c.Algorithms != nil {
		t.Fatalf("compare with an ended context: %v, %d algorithms; want context.Canceled from %s and nothing", err, len(c.Algorithms), algorithms[0].Name)
	}
}
