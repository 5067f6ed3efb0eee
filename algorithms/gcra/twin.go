package gcra

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 4

// step is gcra.lua in Go. The stored value is {tat_us, frac, rate,
// written_us}: the theoretical arrival time tat_us + frac/rate µs, and the
// time of the write.
func step(tx core.Tx, key string, c engine.Call, p []int64) (engine.Reply, engine.State) {
	now, n, mode := c.Now, c.N, c.Mode
	rate, period, burst := p[rate], p[period], p[burst]

	limit := burst * period
	x, t := int64(0), now
	if v, ok := tx.Get(key); ok {
		if !params.State(v, stateLen) || v[1] >= v[2] || v[0] < v[3] {
			return params.CorruptReply, engine.State{}
		}
		tat, frac, oldRate, written := v[0], v[1], v[2], v[3]
		if oldRate != rate && frac > 0 {
			tat, frac = tat+1, 0
		}
		t = max(t, written)
		if tat-written > limit/rate || (tat-written)*rate+frac > limit {
			tat, frac = written+limit/rate, limit%rate
		}
		if tat >= t {
			x = (tat-t)*rate + frac
		}
	}

	refunded := false
	if mode == engine.ModeRefund {
		refunded = x > 0
		x = max(x-n*period, 0)
		n, mode = 1, engine.ModePeek
	}

	avail := (limit - x) / period
	m := n
	if mode == engine.ModeAtMost && avail < n {
		m = avail
	}
	m = max(m, 1)
	var allowed int64
	if x+m*period <= limit {
		allowed = 1
	}

	behind := t - now
	var retry int64
	if allowed == 0 {
		retry = behind + params.CeilDiv(x+m*period-limit, rate)
	}
	write := allowed == 1 && mode != engine.ModePeek
	if write {
		x += m * period
	}
	reset := behind + params.CeilDiv(x, rate)
	var st engine.State
	if write || refunded {
		st.Set(params.TTL(reset, c.ClientClock), t+x/rate, x%rate, rate, t)
		avail = (limit - x) / period
	}
	if mode == engine.ModeAtMost && allowed == 1 {
		allowed = m
	}
	return engine.Reply{allowed, avail, retry, reset}, st
}
