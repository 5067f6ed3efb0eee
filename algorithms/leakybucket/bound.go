package leakybucket

import "github.com/ratekit/ratekit/internal/engine"

// bound is the bucket's guarantee (engine.Spec.Bound): it holds at most
// capacity and drains exactly leak_rate per per, so over every closed
// interval [a, b] at most capacity + leak_rate*(b-a)/per pass. Its Window,
// the time a full bucket takes to drain, is its longest wait.
func bound(p []int64, allowed []engine.Event) error {
	return engine.RateBound(p[capacity], p[leakRate], p[per], allowed)
}
