package tokenbucket

import (
	"fmt"

	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// bound is the bucket's guarantee (engine.Spec.Bound). Refills come at
// least a whole interval apart (a full bucket restarts its phase at its
// next request), so over any closed interval [a, b] at most
// capacity + rate*ceil((b-a)/interval) pass. Its Window, the time an empty
// bucket takes to refill, is its longest wait.
func bound(p []int64, allowed []engine.Event) error {
	last := allowed[len(allowed)-1].At
	var sum int64
	for i := len(allowed) - 1; i >= 0; i-- {
		sum += allowed[i].Cost
		limit := p[capacity] + p[refillRate]*params.CeilDiv(last-allowed[i].At, p[refillInterval])
		if sum > limit {
			return fmt.Errorf("%d allowed in [%d, %d], at most %d may pass", sum, allowed[i].At, last, limit)
		}
	}
	return nil
}
