package slidingcounter

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 5

// step is slidingcounter.lua in Go. The stored value is
// {window_number, previous, current, window_us, fresh_at_us}.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	limit, window := p[limit], p[window]

	live := false
	var a, b, cc int64
	w, fresh := window, int64(-1)
	if v, ok := tx.Get(key); ok && (!params.State(v, stateLen) || v[3] < 1 || v[0] > params.MaxState/v[3]) {
		return params.CorruptReply, engine.State{}
	} else if ok && now < v[4] {
		live = true
		a, b, cc, w, fresh = v[0], min(v[1], limit), min(v[2], limit), v[3], v[4]
	}

	// Geometry 1 is the state's own Window; 2, when another Window wrote
	// it, this one's (see slidingcounter.lua).
	last, any := 1, window < w
	if w != window {
		last = 2
	}
	var allowed, retry, reset, remaining int64
	var refunded, added bool
	var lastOK, lastRetry int64
	var W, wn, prev, curr, start, e, m int64
	for g := 1; g <= last; g++ {
		W = w
		if g == 2 {
			W = window
		}
		wn = now / W
		prev, curr = 0, 0
		if live {
			x, y, z := a, b, cc
			if g == 2 {
				x, y, z = a*w/W, 0, min(b+cc, limit)
			}
			switch {
			case x == wn:
				prev, curr = y, z
			case x == wn-1:
				prev = z
			case x > wn:
				wn, prev, curr = x, y, z
			}
		}
		start = wn * W
		e = max(now-start, 0)

		m = n
		pk, rf := peek, false
		if refund {
			rf = prev+curr > 0
			back := min(m, curr)
			curr -= back
			prev = max(prev-(m-back), 0)
			m, pk = 1, true
		}

		K := limit - m + 1
		var ok, rt int64
		if prev*(W-e)+curr*W < K*W {
			ok = 1
			if !pk {
				curr += m
			}
		} else {
			at := int64(-1)
			if curr < K && prev > 0 {
				if es := W - ((K-curr)*W-1)/prev; es < W {
					at = start + es
				}
			}
			if at < 0 {
				if curr == 0 {
					at = start + W
				} else if es := max(W-(K*W-1)/curr, 0); es < W {
					at = start + W + es
				}
			}
			if at < 0 {
				at = start + 2*W
			}
			rt = at - now
		}
		rs, rem := resetAndRemaining(limit, W, start, e, now, prev, curr)

		switch {
		case g == 1:
			allowed, retry, reset, remaining = ok, rt, rs, rem
		case any:
			if ok == 1 || allowed == 1 {
				allowed, retry = 1, 0
			} else {
				retry = min(retry, rt)
			}
			reset, remaining = min(reset, rs), max(remaining, rem)
		default:
			if ok == 0 || allowed == 0 {
				allowed, retry = 0, max(retry, rt)
			}
			reset, remaining = max(reset, rs), min(remaining, rem)
		}
		refunded, added, lastOK, lastRetry = rf, ok == 1, ok, rt
	}

	write := allowed == 1 && !peek
	var st engine.State
	if write || refunded {
		if write && !added {
			curr += m
		}
		if refunded {
			// A refund's reply is the Peek of what it wrote.
			allowed, retry = lastOK, lastRetry
		}
		reset, remaining = resetAndRemaining(limit, W, start, e, now, prev, curr)
		st.Set(params.TTL(reset, c.ClientClock), wn, prev, curr, W, now+reset)
	} else if fresh >= 0 {
		retry, reset = min(retry, fresh-now), min(reset, fresh-now)
	}
	return engine.Reply{allowed, remaining, retry, reset}, st
}

// resetAndRemaining returns the wait until the counts have left the
// estimate, and how many requests of cost 1 would pass now.
func resetAndRemaining(limit, W, start, e, now, prev, curr int64) (reset, remaining int64) {
	if curr > 0 {
		reset = start + 2*W - now
	} else if prev > 0 {
		reset = start + W - now
	}
	if d := limit*W - curr*W - prev*(W-e); d > 0 {
		remaining = params.CeilDiv(d, W)
	}
	return reset, remaining
}
