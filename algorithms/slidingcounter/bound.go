package slidingcounter

import (
	"fmt"
	"time"

	"github.com/ratekit/ratekit/internal/engine"
)

// bound is the counter's guarantee (engine.Spec.Bound), the package doc's
// bounds: at most limit per aligned window; and in the rolling interval
// (t-window, t], fewer than limit + 1 + prev*e/window, where prev is the
// previous aligned window's count and e = t mod window (the estimate
// weighs prev by (window-e)/window, as if it had been spread evenly).
func bound(p []int64, allowed []engine.Event) error {
	w, lim := p[window], p[limit]
	last := allowed[len(allowed)-1].At
	wn, e := last/w, last%w
	var curr, prev, rolling int64
	for _, ev := range allowed {
		switch ev.At / w {
		case wn:
			curr += ev.Cost
		case wn - 1:
			prev += ev.Cost
		}
		if ev.At > last-w {
			rolling += ev.Cost
		}
	}
	if curr > lim {
		return fmt.Errorf("%d allowed in aligned window %d, limit %d", curr, wn, lim)
	}
	if rolling*w >= (lim+1)*w+prev*e {
		return fmt.Errorf("%d allowed in (%d, %d]: not below limit+1+prev*e/W = %d+1+%d*%d/%d", rolling, last-w, last, lim, prev, e, w)
	}
	return nil
}

// looseBound is the bound for inexact request times
// (engine.Spec.LooseBound), which cannot tell the aligned window a request
// fell in: any rolling window holds at most 2 x limit, since prev is at
// most limit.
func looseBound(p []int64, allowed []engine.Event) error {
	return engine.RollingBound(2*p[limit], p[window], allowed)
}

// maxWait is the longest wait (engine.Spec.MaxWait): two windows, since
// what an aligned window counted weighs on the estimate until the end of
// the next one.
func maxWait(_ []int64, w time.Duration) time.Duration { return 2 * w }
