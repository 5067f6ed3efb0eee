package slidinglog

import "github.com/ratekit/ratekit/internal/engine"

// bound is the log's guarantee (engine.Spec.Bound): it counts every
// allowed unit of the last window exactly, so any interval (t-window, t]
// holds at most limit.
func bound(p []int64, allowed []engine.Event) error {
	return engine.RollingBound(p[limit], p[window], allowed)
}
