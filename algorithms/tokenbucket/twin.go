package tokenbucket

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 4

// oldStateLen is how many integers an earlier ratekit stored: tokens,
// last_refill_us and fresh_at_us, without the capacity that wrote them.
const oldStateLen = 3

// step is tokenbucket.lua in Go: same arguments, same reply, same steps.
// The stored value is {tokens, last_refill_us, fresh_at_us}.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	capacity, rate, interval := p[capacity], p[refillRate], p[refillInterval]

	tokens, last, fresh := capacity, now, int64(-1)
	if v, ok := tx.Get(key); ok {
		old := params.State(v, oldStateLen)
		if !old && (!params.State(v, stateLen) || v[3] < 1 || v[0] > v[3]) {
			return params.CorruptReply, engine.State{}
		}
		if now < v[2] {
			tokens, last, fresh = v[0], v[1], v[2]
			if !old && v[3] != capacity && p[carry] == engine.CarryUsed {
				tokens = max(tokens+capacity-v[3], 0)
			}
			tokens = min(tokens, capacity)
		}
	}

	if tokens < capacity && now > last {
		refills := (now - last) / interval
		if refills > 0 {
			if refills >= params.CeilDiv(capacity-tokens, rate) {
				tokens = capacity
			} else {
				tokens += refills * rate
				last += refills * interval
			}
		}
	}
	if tokens >= capacity {
		tokens = capacity
		last = now
	}
	if refund {
		tokens = min(tokens+n, capacity)
		if tokens >= capacity {
			last = now
		}
		n, peek = 1, true
	}

	var allowed int64
	if tokens >= n {
		allowed = 1
		if !peek {
			tokens -= n
		}
	}
	var retry, reset int64
	if allowed == 0 {
		retry = last + params.CeilDiv(n-tokens, rate)*interval - now
		if fresh >= 0 {
			retry = min(retry, fresh-now)
		}
	}
	if tokens < capacity {
		reset = last + params.CeilDiv(capacity-tokens, rate)*interval - now
		if fresh >= 0 && (allowed == 0 || peek) {
			reset = min(reset, fresh-now)
		}
	}
	var st engine.State
	if (allowed == 1 && !peek) || (refund && fresh >= 0) {
		st.Set(params.TTL(reset, c.ClientClock), tokens, last, now+reset, capacity)
	}
	return engine.Reply{allowed, tokens, retry, reset}, st
}
