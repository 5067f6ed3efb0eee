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
func step(tx core.Tx, key string, c engine.Call, p []int64) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	limit, W := p[limit], p[window]

	wn := now / W
	var prev, curr int64
	fresh := int64(-1)
	if v, ok := tx.Get(key); ok && (!params.State(v, stateLen) || v[3] < 1 || v[0] > params.MaxState/v[3]) {
		return params.CorruptReply, engine.State{}
	} else if ok && now < v[4] {
		a, b, c, w := v[0], min(v[1], limit), min(v[2], limit), v[3]
		fresh = v[4]
		if w != W {
			a, b, c = a*w/W, 0, min(b+c, limit)
		}
		switch {
		case a == wn:
			prev, curr = b, c
		case a == wn-1:
			prev = c
		case a > wn:
			wn, prev, curr = a, b, c
		}
	}
	start := wn * W
	e := max(now-start, 0)

	refunded := false
	if refund {
		refunded = prev+curr > 0
		back := min(n, curr)
		curr -= back
		prev = max(prev-(n-back), 0)
		n, peek = 1, true
	}

	K := limit - n + 1
	var allowed int64
	if prev*(W-e)+curr*W < K*W {
		allowed = 1
		if !peek {
			curr += n
		}
	}

	var retry int64
	if allowed == 0 {
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
		retry = at - now
	}

	var reset int64
	if curr > 0 {
		reset = start + 2*W - now
	} else if prev > 0 {
		reset = start + W - now
	}
	write := allowed == 1 && !peek
	if fresh >= 0 && !write {
		retry, reset = min(retry, fresh-now), min(reset, fresh-now)
	}
	var st engine.State
	if write || refunded {
		st.Set(params.TTL(reset, c.ClientClock), wn, prev, curr, W, now+reset)
	}

	var remaining int64
	if d := limit*W - curr*W - prev*(W-e); d > 0 {
		remaining = params.CeilDiv(d, W)
	}
	return engine.Reply{allowed, remaining, retry, reset}, st
}
