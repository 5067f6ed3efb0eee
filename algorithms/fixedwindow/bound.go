package fixedwindow

import (
	"fmt"

	"github.com/ratekit/ratekit/internal/engine"
)

// bound is the window's guarantee (engine.Spec.Bound): a window opens at
// the first allowed request at or after the end of the previous one (or,
// aligned, at the multiple of the window that holds it) and holds at most
// limit.
func bound(p []int64, allowed []engine.Event) error {
	open := func(at int64) int64 {
		if p[aligned] == 1 {
			return at - at%p[window]
		}
		return at
	}
	start, sum := open(allowed[0].At), int64(0)
	for _, e := range allowed {
		if e.At >= start+p[window] {
			start, sum = open(e.At), 0
		}
		sum += e.Cost
		if sum > p[limit] {
			return fmt.Errorf("%d allowed in the window opened at %d, limit %d", sum, start, p[limit])
		}
	}
	return nil
}

// looseBound is the bound for inexact request times
// (engine.Spec.LooseBound), which cannot tell when a window opened: any
// rolling window holds at most 2 x limit (the end of one window and the
// start of the next).
func looseBound(p []int64, allowed []engine.Event) error {
	return engine.RollingBound(2*p[limit], p[window], allowed)
}
