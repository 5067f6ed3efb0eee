package fixedwindow

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is fixedwindow.lua in Go. The stored value is {count, start_us}.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, limit, window, peek := args[0], args[1], args[2], args[3], args[4] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	count, start := int64(0), now
	if v, ok := tx.Get(key); ok {
		count, start = v[0], v[1]
		if now >= start+window {
			count, start = 0, now
		}
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
		retry = start + window - now
	}
	if count > 0 {
		reset = start + window - now
	}
	if allowed == 1 && !peek {
		v := tx.Put(key, 2, params.TTL(reset, clientClock))
		v[0], v[1] = count, start
	}
	return append(reply, allowed, max(limit-count, 0), retry, reset), nil
}
