package conformance

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// Refill intervals are whole seconds or more so that, against a real
// server in client-clock mode, TTLs (which run on the server's real clock)
// never end inside one check.
var tokenBucketIntervals = []time.Duration{
	time.Second, 7 * time.Second, 13*time.Second + 370*time.Millisecond + 11*time.Microsecond,
	time.Minute, time.Hour, 24 * time.Hour,
}

func drawTokenBucket(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = tokenBucketIntervals
	}
	cfg := tokenbucket.Config{
		Capacity:       rapid.Int64Range(1, 20).Draw(t, "capacity"),
		RefillInterval: rapid.SampledFrom(periods).Draw(t, "interval"),
	}
	cfg.RefillRate = rapid.Int64Range(1, cfg.Capacity+2).Draw(t, "rate")
	capacity, rate, interval := cfg.Capacity, cfg.RefillRate, int64(cfg.RefillInterval/time.Microsecond)
	// An empty bucket refills in wait: that is its Window too.
	wait := time.Duration(params.CeilDiv(capacity, rate)*interval) * time.Microsecond
	return variant{
		tag:  "tb:",
		wait: wait,
		desc: fmt.Sprintf("tokenbucket capacity=%d rate=%d interval=%v", cfg.Capacity, cfg.RefillRate, cfg.RefillInterval),
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			c := cfg
			c.Prefix, c.Clock = prefix+"tb:", clock
			return tokenbucket.New(r, c)
		},
		maxCost: cfg.Capacity,
		period:  cfg.RefillInterval,
		window:  wait,
		// Refills come at least a whole interval apart (a full bucket
		// restarts its phase at its next request), so over any closed
		// interval [a, b] at most capacity + rate*ceil((b-a)/interval) pass.
		bound: func(h []event) error {
			last := h[len(h)-1]
			var sum int64
			for i := len(h) - 1; i >= 0; i-- {
				sum += h[i].cost
				limit := capacity + rate*params.CeilDiv(last.at-h[i].at, interval)
				if sum > limit {
					return fmt.Errorf("%d allowed in [%d, %d], at most %d may pass", sum, h[i].at, last.at, limit)
				}
			}
			return nil
		},
	}
}
