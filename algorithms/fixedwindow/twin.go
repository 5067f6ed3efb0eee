package fixedwindow

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// stateLen is how many integers the stored value holds
// (engine.Spec.StateLen).
const stateLen = 3

// step is fixedwindow.lua in Go. The stored value is {count, start_us,
// end_us}.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	limit, window := p[limit], p[window]

	open := now
	if p[calendarStart] > 0 {
		open = p[calendarStart]
	} else if p[aligned] == 1 {
		open = now - now%window
	}
	count, start, stop := int64(0), open, open+window
	if v, ok := tx.Get(key); ok {
		if !params.State(v, stateLen) {
			return params.CorruptReply, engine.State{}
		}
		count, start, stop = min(v[0], limit), v[1], min(v[1]+window, v[2])
		if now >= stop {
			count, start, stop = 0, open, open+window
		}
	}

	refunded := false
	if refund {
		refunded = count > 0
		count = max(count-n, 0)
		n, peek = 1, true
	}

	var allowed int64
	if count+n <= limit {
		allowed = 1
		if !peek {
			count += n
		}
	}
	var retry, reset int64
	if allowed == 0 {
		retry = stop - now
	}
	if count > 0 {
		reset = stop - now
	}
	var st engine.State
	if allowed == 1 && !peek {
		st.Set(params.TTL(reset, c.ClientClock), count, start, stop)
	} else if refunded && count == 0 {
		st.Write, st.List = true, []int64{} // deletes the key
	} else if refunded {
		st.Set(params.TTL(stop-now, c.ClientClock), count, start, stop)
	}
	return engine.Reply{allowed, limit - count, retry, reset}, st
}
