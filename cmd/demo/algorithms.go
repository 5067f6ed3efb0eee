package main

import (
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
)

// param is one integer parameter of an algorithm, as the page shows it.
type param struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Default int64  `json:"default"`
}

// algorithm is one algorithm the demo offers.
type algorithm struct {
	Name   string  `json:"name"`
	Title  string  `json:"title"`
	State  string  `json:"state"` // what Remaining means, for the page
	Params []param `json:"params"`
	build  func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error)
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

var algorithms = []algorithm{
	{
		Name: "tokenbucket", Title: "Token bucket", State: "tokens in the bucket",
		Params: []param{{"capacity", "Capacity (tokens)", 5}, {"refill_rate", "Refill rate (tokens)", 1}, {"refill_interval_ms", "Refill interval (ms)", 2000}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return tokenbucket.New(r, tokenbucket.Config{Capacity: p["capacity"], RefillRate: p["refill_rate"], RefillInterval: ms(p["refill_interval_ms"]), Prefix: prefix})
		},
	},
	{
		Name: "fixedwindow", Title: "Fixed window counter", State: "requests left in the window",
		Params: []param{{"limit", "Limit (requests)", 5}, {"window_ms", "Window (ms)", 10000}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return fixedwindow.New(r, fixedwindow.Config{Limit: p["limit"], Window: ms(p["window_ms"]), Prefix: prefix})
		},
	},
	{
		Name: "slidinglog", Title: "Sliding window log", State: "requests left in the rolling window",
		Params: []param{{"limit", "Limit (requests)", 5}, {"window_ms", "Window (ms)", 10000}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return slidinglog.New(r, slidinglog.Config{Limit: p["limit"], Window: ms(p["window_ms"]), Prefix: prefix})
		},
	},
	{
		Name: "slidingcounter", Title: "Sliding window counter", State: "requests the estimate still allows",
		Params: []param{{"limit", "Limit (requests)", 5}, {"window_ms", "Window (ms)", 10000}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return slidingcounter.New(r, slidingcounter.Config{Limit: p["limit"], Window: ms(p["window_ms"]), Prefix: prefix})
		},
	},
	{
		Name: "leakybucket", Title: "Leaky bucket (policing)", State: "room left in the bucket",
		Params: []param{{"capacity", "Capacity", 5}, {"leak_rate", "Leak rate (units)", 1}, {"per_ms", "Per (ms)", 2000}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return leakybucket.New(r, leakybucket.Config{Capacity: p["capacity"], LeakRate: p["leak_rate"], Per: ms(p["per_ms"]), Prefix: prefix})
		},
	},
	{
		Name: "gcra", Title: "GCRA", State: "requests available now",
		Params: []param{{"rate", "Rate (requests)", 1}, {"period_ms", "Period (ms)", 2000}, {"burst", "Burst", 5}},
		build: func(r core.ScriptRunner, prefix string, p map[string]int64) (core.Limiter, error) {
			return gcra.New(r, gcra.Config{Rate: p["rate"], Period: ms(p["period_ms"]), Burst: p["burst"], Prefix: prefix})
		},
	},
}

func findAlgorithm(name string) (algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return algorithm{}, fmt.Errorf("unknown algorithm %q", name)
}
