package gcra

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 6

// oldStateLen is how many integers an earlier ratekit stored: tat_us,
// frac, rate_w and written_us, without the Period and Burst that wrote
// them.
const oldStateLen = 4

// step is gcra.lua in Go. The stored value is {tat_us, frac, rate,
// written_us}: the theoretical arrival time tat_us + frac/rate µs, and the
// time of the write.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, mode := c.Now, c.N, c.Mode
	rate, period, burst := p[rate], p[period], p[burst]

	limit := burst * period
	x, t, fresh := int64(0), now, int64(-1)
	if v, ok := tx.Get(key); ok {
		old := params.State(v, oldStateLen)
		if !old && !params.State(v, stateLen) || v[1] >= v[2] || v[0] < v[3] ||
			!old && (v[4] < 1 || v[5] < 1 || v[2] < 1 || v[5] > params.MaxCount/v[4] || v[0]-v[3] > v[5]*v[4]/v[2]) {
			return params.CorruptReply, engine.State{}
		}
		tat, frac, oldRate, written := v[0], v[1], v[2], v[3]
		t = max(t, written)
		if !old && (oldRate != rate || v[4] != period || v[5] != burst && p[carry] == engine.CarryAvailable) {
			// Written under another configuration: what it used, or had
			// left, carries over in whole units (see gcra.lua).
			oldPeriod, oldBurst := v[4], v[5]
			ends := tat
			if frac > 0 {
				ends++
			}
			if t < ends {
				// Converted as of its write, then drained at this
				// configuration's rate.
				fresh = ends
				xw := (tat-written)*oldRate + frac
				// A partly drained request counts as drained for a
				// configuration at least as fast and as large as the
				// writer's, as not otherwise.
				up := rate >= oldRate && period <= oldPeriod && burst >= oldBurst
				var units int64
				if p[carry] == engine.CarryUsed {
					if up {
						units = xw / oldPeriod
					} else {
						units = params.CeilDiv(xw, oldPeriod)
					}
				} else {
					left := oldBurst*oldPeriod - xw // never below -oldRate: see the checks above
					if up {
						left = floorDiv(left+oldPeriod-1, oldPeriod)
					} else {
						left = floorDiv(left, oldPeriod)
					}
					units = burst - min(left, burst)
				}
				x0 := min(units, burst) * period
				tat, frac = written+x0/rate, x0%rate
				if tat >= t {
					x = (tat-t)*rate + frac
				}
			}
		} else {
			if old && oldRate != rate && frac > 0 {
				tat, frac = tat+1, 0
			}
			if tat-written > limit/rate || (tat-written)*rate+frac > limit {
				tat, frac = written+limit/rate, limit%rate
			}
			if tat >= t {
				x = (tat-t)*rate + frac
			}
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
		st.Set(params.TTL(reset, c.ClientClock), t+x/rate, x%rate, rate, t, period, burst)
		avail = (limit - x) / period
	} else if fresh >= 0 {
		// From the writer's TAT on, the key is fresh.
		retry, reset = min(retry, fresh-now), min(reset, fresh-now)
	}
	if mode == engine.ModeAtMost && allowed == 1 {
		allowed = m
	}
	return engine.Reply{allowed, avail, retry, reset}, st
}

// floorDiv is a/b rounded down, as Lua's idiv, for b > 0 and any a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
