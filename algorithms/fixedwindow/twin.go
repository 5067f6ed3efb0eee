package fixedwindow

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is fixedwindow.lua in Go. The stored value is {count, start_us,
// end_us}.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, limit, window, peek := args[0], args[1], args[2], args[3], args[4] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	count, start, stop := int64(0), now, now+window
	if v, ok := tx.Get(key); ok {
		if !params.State(v, 3) {
			return append(reply, params.CorruptReply[:]...), nil
		}
		count, start, stop = min(v[0], limit), v[1], min(v[1]+window, v[2])
		if now >= stop {
			count, start, stop = 0, now, now+window
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
		retry = stop - now
	}
	if count > 0 {
		reset = stop - now
	}
	if allowed == 1 && !peek {
		v := tx.Put(key, 3, params.TTL(reset, clientClock))
		v[0], v[1], v[2] = count, start, stop
	}
	return append(reply, allowed, limit-count, retry, reset), nil
}
