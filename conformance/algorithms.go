package conformance

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

func drawFixedWindow(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = defaultPeriods
	}
	cfg := fixedwindow.Config{
		Limit:  rapid.Int64Range(1, 20).Draw(t, "limit"),
		Window: rapid.SampledFrom(periods).Draw(t, "window"),
	}
	limit, w := cfg.Limit, micros(cfg.Window)
	return variant{
		tag:        "fw:",
		looseBound: rolling(2*cfg.Limit, micros(cfg.Window)),
		wait:       cfg.Window,
		desc:       fmt.Sprintf("fixedwindow limit=%d window=%v", cfg.Limit, cfg.Window),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"fw:", clock
			return fixedwindow.New(r, c)
		},
		maxCost: cfg.Limit,
		period:  cfg.Window,
		window:  cfg.Window,
		// A window opens at the first allowed request at or after the end
		// of the previous one and holds at most limit.
		bound: func(h []event) error {
			start, sum := h[0].at, int64(0)
			for _, e := range h {
				if e.at >= start+w {
					start, sum = e.at, 0
				}
				sum += e.cost
				if sum > limit {
					return fmt.Errorf("%d allowed in the window opened at %d, limit %d", sum, start, limit)
				}
			}
			return nil
		},
	}
}

func drawSlidingLog(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = defaultPeriods
	}
	cfg := slidinglog.Config{
		Limit:  rapid.Int64Range(1, 20).Draw(t, "limit"),
		Window: rapid.SampledFrom(periods).Draw(t, "window"),
	}
	limit, w := cfg.Limit, micros(cfg.Window)
	return variant{
		tag:  "sl:",
		wait: cfg.Window,
		desc: fmt.Sprintf("slidinglog limit=%d window=%v", cfg.Limit, cfg.Window),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"sl:", clock
			return slidinglog.New(r, c)
		},
		maxCost: cfg.Limit,
		period:  cfg.Window,
		window:  cfg.Window,
		// Any interval (t-window, t] holds at most limit.
		bound: func(h []event) error {
			last := h[len(h)-1].at
			var sum int64
			for i := len(h) - 1; i >= 0 && h[i].at > last-w; i-- {
				sum += h[i].cost
			}
			if sum > limit {
				return fmt.Errorf("%d allowed in (%d, %d], limit %d", sum, last-w, last, limit)
			}
			return nil
		},
	}
}

func drawSlidingCounter(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = defaultPeriods
	}
	cfg := slidingcounter.Config{
		Limit:  rapid.Int64Range(1, 20).Draw(t, "limit"),
		Window: rapid.SampledFrom(periods).Draw(t, "window"),
	}
	limit, w := cfg.Limit, micros(cfg.Window)
	return variant{
		tag:        "sc:",
		looseBound: rolling(2*cfg.Limit, micros(cfg.Window)),
		wait:       2 * cfg.Window,
		desc:       fmt.Sprintf("slidingcounter limit=%d window=%v", cfg.Limit, cfg.Window),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"sc:", clock
			return slidingcounter.New(r, c)
		},
		maxCost: cfg.Limit,
		period:  cfg.Window,
		window:  cfg.Window,
		// At most limit per aligned window; and in the rolling interval
		// (t-window, t], fewer than limit + 1 + prev*e/window, where prev
		// is the previous aligned window's count and e = t mod window.
		bound: func(h []event) error {
			last := h[len(h)-1].at
			wn, e := last/w, last%w
			var curr, prev, rolling int64
			for _, ev := range h {
				switch ev.at / w {
				case wn:
					curr += ev.cost
				case wn - 1:
					prev += ev.cost
				}
				if ev.at > last-w {
					rolling += ev.cost
				}
			}
			if curr > limit {
				return fmt.Errorf("%d allowed in aligned window %d, limit %d", curr, wn, limit)
			}
			if rolling*w >= (limit+1)*w+prev*e {
				return fmt.Errorf("%d allowed in (%d, %d]: not below limit+1+prev*e/W = %d+1+%d*%d/%d", rolling, last-w, last, limit, prev, e, w)
			}
			return nil
		},
	}
}

// rateBound checks that over every closed interval [a, b] ending at the
// newest request, allowed*per <= burst*per + rate*(b-a).
func rateBound(burst, rate, per int64) func(h []event) error {
	return func(h []event) error {
		last := h[len(h)-1].at
		var sum int64
		for i := len(h) - 1; i >= 0; i-- {
			sum += h[i].cost
			if sum*per > burst*per+rate*(last-h[i].at) {
				return fmt.Errorf("%d allowed in [%d, %d], more than %d + %d per %dµs", sum, h[i].at, last, burst, rate, per)
			}
		}
		return nil
	}
}

func drawLeakyBucket(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = defaultPeriods
	}
	cfg := leakybucket.Config{
		Capacity: rapid.Int64Range(1, 20).Draw(t, "capacity"),
		LeakRate: rapid.Int64Range(1, 10).Draw(t, "rate"),
		Per:      rapid.SampledFrom(periods).Draw(t, "per"),
	}
	// A full bucket drains in wait: that is its Window too.
	wait := time.Duration(params.CeilDiv(cfg.Capacity*micros(cfg.Per), cfg.LeakRate)) * time.Microsecond
	return variant{
		tag:  "lb:",
		wait: wait,
		desc: fmt.Sprintf("leakybucket capacity=%d rate=%d per=%v", cfg.Capacity, cfg.LeakRate, cfg.Per),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"lb:", clock
			return leakybucket.New(r, c)
		},
		maxCost: cfg.Capacity,
		period:  cfg.Per,
		window:  wait,
		bound:   rateBound(cfg.Capacity, cfg.LeakRate, micros(cfg.Per)),
	}
}

func drawGCRA(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = defaultPeriods
	}
	cfg := gcra.Config{
		Rate:   rapid.Int64Range(1, 10).Draw(t, "rate"),
		Period: rapid.SampledFrom(periods).Draw(t, "period"),
		Burst:  rapid.Int64Range(1, 20).Draw(t, "burst"),
	}
	// A burst comes back in wait: that is its Window too.
	wait := time.Duration(params.CeilDiv(cfg.Burst*micros(cfg.Period), cfg.Rate)) * time.Microsecond
	return variant{
		tag:  "gcra:",
		wait: wait,
		desc: fmt.Sprintf("gcra rate=%d period=%v burst=%d", cfg.Rate, cfg.Period, cfg.Burst),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"gcra:", clock
			return gcra.New(r, c)
		},
		maxCost: cfg.Burst,
		period:  cfg.Period,
		window:  wait,
		atMost:  true,
		bound:   rateBound(cfg.Burst, cfg.Rate, micros(cfg.Period)),
	}
}

// rolling checks that the window (last - w, last] before the newest request
// holds at most max.
func rolling(max, w int64) func(h []event) error {
	return func(h []event) error {
		last := h[len(h)-1].at
		var sum int64
		for i := len(h) - 1; i >= 0 && h[i].at > last-w; i-- {
			sum += h[i].cost
		}
		if sum > max {
			return fmt.Errorf("%d allowed in (%d, %d], at most %d may pass", sum, last-w, last, max)
		}
		return nil
	}
}
