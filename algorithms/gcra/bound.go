package gcra

import "github.com/ratekit/ratekit/internal/engine"

// bound is GCRA's guarantee (engine.Spec.Bound): the theoretical arrival
// time moves one emission interval (period/rate) per unit allowed and is
// never more than a burst ahead of now, so over every closed interval
// [a, b] at most burst + rate*(b-a)/period pass. Its Window, the time a
// burst takes to come back, is its longest wait.
func bound(p []int64, allowed []engine.Event) error {
	return engine.RateBound(p[burst], p[rate], p[period], allowed)
}
