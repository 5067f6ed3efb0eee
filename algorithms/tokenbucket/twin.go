package tokenbucket

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is tokenbucket.lua in Go: same arguments, same reply, same steps.
// The stored value is {tokens, last_refill_us, fresh_at_us}.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, capacity, rate, interval, peek := args[0], args[1], args[2], args[3], args[4], args[5] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	tokens, last, fresh := capacity, now, int64(-1)
	if v, ok := tx.Get(key); ok {
		if !params.State(v, 3) {
			return append(reply, params.CorruptReply[:]...), nil
		}
		if now < v[2] {
			tokens, last, fresh = min(v[0], capacity), v[1], v[2]
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
	if allowed == 1 && !peek {
		v := tx.Put(key, 3, params.TTL(reset, clientClock))
		v[0], v[1], v[2] = tokens, last, now+reset
	}
	return append(reply, allowed, tokens, retry, reset), nil
}
