package leakybucket

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is leakybucket.lua in Go. The stored value is
// {level scaled by per_us, last_leak_us}.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, capacity, rate, per, peek := args[0], args[1], args[2], args[3], args[4], args[5] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	level := int64(0)
	if v, ok := tx.Get(key); ok {
		level = v[0]
		if last := v[1]; level > 0 && now > last {
			if elapsed := now - last; elapsed >= params.CeilDiv(level, rate) {
				level = 0
			} else {
				level -= elapsed * rate
			}
		}
	}

	full, add := capacity*per, n*per
	var allowed int64
	if level+add <= full {
		allowed = 1
		if !peek {
			level += add
		}
	}
	var retry int64
	if allowed == 0 {
		retry = params.CeilDiv(level+add-full, rate)
	}
	reset := params.CeilDiv(level, rate)
	if allowed == 1 && !peek {
		v := tx.Put(key, 2, params.TTL(reset, clientClock))
		v[0], v[1] = level, now
	}
	return append(reply, allowed, (full-level)/per, retry, reset), nil
}
