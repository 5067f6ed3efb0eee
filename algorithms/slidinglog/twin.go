package slidinglog

import (
	"slices"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is slidinglog.lua in Go. The stored value is the sorted list of the
// times (µs) of allowed units of cost, oldest first.
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, limit, window, peek := args[0], args[1], args[2], args[3], args[4] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}
	cutoff := now - window

	stored, _ := tx.Get(key)
	// Entries after the cutoff: the live window, still sorted.
	first, _ := slices.BinarySearch(stored, cutoff+1)
	live := stored[first:]
	count := int64(len(live))

	var allowed int64
	if count+n <= limit {
		allowed = 1
	}
	if allowed == 1 && !peek {
		at, _ := slices.BinarySearch(live, now+1)
		next := make([]int64, 0, len(live)+int(n))
		next = append(next, live[:at]...)
		for i := int64(0); i < n; i++ {
			next = append(next, now)
		}
		live = append(next, live[at:]...)
		count += n
	}

	var retry, reset int64
	if allowed == 0 {
		retry = live[count+n-limit-1] + window - now
	}
	if count > 0 {
		reset = live[count-1] + window - now
	}
	if allowed == 1 && !peek {
		copy(tx.Put(key, len(live), params.TTL(reset, clientClock)), live)
	}
	return append(reply, allowed, limit-count, retry, reset), nil
}
