package gcra

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is gcra.lua in Go. The stored value is {tat_us, frac}: the
// theoretical arrival time tat_us + frac/rate µs.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, rate, period, burst, mode := args[0], args[1], args[2], args[3], args[4], args[5]
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	limit := burst * period
	var x int64
	if v, ok := tx.Get(key); ok {
		if a, b := v[0], v[1]; a >= now {
			d := a - now
			if dmax := limit/rate + 1; d > dmax {
				d, b = dmax, 0
			}
			x = d*rate + b
		}
	}

	var avail int64
	if limit >= x {
		avail = (limit - x) / period
	}
	m := n
	if mode == engine.ModeAtMost && avail < n {
		m = avail
	}
	m = max(m, 1)
	var allowed int64
	if x+m*period <= limit {
		allowed = 1
	}

	var retry int64
	if allowed == 0 {
		retry = params.CeilDiv(x+m*period-limit, rate)
	}
	write := allowed == 1 && mode != engine.ModePeek
	if write {
		x += m * period
	}
	reset := params.CeilDiv(x, rate)
	if write {
		v := tx.Put(key, 2, params.TTL(reset, clientClock))
		v[0], v[1] = now+x/rate, x%rate
		avail = (limit - x) / period
	}
	if mode == engine.ModeAtMost && allowed == 1 {
		allowed = m
	}
	return append(reply, allowed, avail, retry, reset), nil
}
