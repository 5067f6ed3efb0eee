package leakybucket

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 6

// oldStateLen is how many integers an earlier ratekit stored: level,
// last_leak_us, per_us and fresh_at_us, without the Capacity and LeakRate
// that wrote them.
const oldStateLen = 4

// step is leakybucket.lua in Go. The stored value is
// {level scaled by per_us, last_leak_us, per_us, fresh_at_us}.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	capacity, rate, per := p[capacity], p[leakRate], p[per]

	full := capacity * per
	level, t, fresh := int64(0), now, int64(-1)
	v, ok := tx.Get(key)
	old := ok && params.State(v, oldStateLen)
	if ok && (!old && !params.State(v, stateLen) || v[2] < 1 || !old && (v[4] < 1 || v[5] < 1 || v[4] > params.MaxSpan/v[2] || v[0] > v[4]*v[2])) {
		return params.CorruptReply, engine.State{}
	} else if ok && max(now, v[1]) < v[3] {
		last, oldPer := v[1], v[2]
		fresh = v[3]
		level = v[0]
		// A partly drained unit counts as drained for a configuration at
		// least as large and as fast as the writer's, as not otherwise.
		up := !old && capacity >= v[4] && rate >= v[5] && per <= oldPer
		switch {
		case old:
			if oldPer != per {
				level = min(params.CeilDiv(level, oldPer), capacity) * per
			}
		case p[carry] == engine.CarryAvailable && (oldPer != per || v[4] != capacity):
			room := (v[4]*oldPer - level) / oldPer
			if up {
				room = params.CeilDiv(v[4]*oldPer-level, oldPer)
			}
			level = (capacity - min(room, capacity)) * per
		case oldPer != per:
			if up {
				level = min(level/oldPer, capacity) * per
			} else {
				level = min(params.CeilDiv(level, oldPer), capacity) * per
			}
		}
		level = min(level, full)
		t = max(t, last)
		if level > 0 {
			if elapsed := t - last; elapsed >= params.CeilDiv(level, rate) {
				level = 0
			} else {
				level -= elapsed * rate
			}
		}
	}

	refunded := false
	if refund {
		refunded = level > 0
		level = max(level-n*per, 0)
		n, peek = 1, true
	}

	add := n * per
	var allowed int64
	if level+add <= full {
		allowed = 1
		if !peek {
			level += add
		}
	}
	behind := t - now
	var retry int64
	if allowed == 0 {
		retry = behind + params.CeilDiv(level+add-full, rate)
	}
	var reset int64 // an empty bucket is reset already, even with the clock behind
	if level > 0 {
		reset = behind + params.CeilDiv(level, rate)
	}
	write := allowed == 1 && !peek
	if fresh >= 0 && !write {
		retry, reset = min(retry, fresh-now), min(reset, fresh-now)
	}
	var st engine.State
	if write || refunded {
		st.Set(params.TTL(reset, c.ClientClock), level, t, per, now+reset, capacity, rate)
	}
	return engine.Reply{allowed, (full - level) / per, retry, reset}, st
}
