package slidinglog

import (
	"slices"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// twin is slidinglog.lua in Go. The stored value is the sorted list of the
// times (µs) of allowed units of cost, oldest first, followed by the time
// the log expires (the "~" member of the Lua sorted set).
func twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	key := keys[0]
	now, n, limit, window, peek := args[0], args[1], args[2], args[3], args[4] == 1
	clientClock := now >= 0
	if !clientClock {
		now = tx.Now()
	}

	stored, ok := tx.Get(key)
	t, fresh := now, int64(-1)
	var log []int64
	if ok {
		if len(stored) < 2 {
			return append(reply, params.CorruptReply[:]...), nil
		}
		log, fresh = stored[:len(stored)-1], stored[len(stored)-1]
		oldest, newest := log[0], log[len(log)-1]
		if oldest < 0 || oldest > newest || fresh <= newest || fresh > params.MaxState {
			return append(reply, params.CorruptReply[:]...), nil
		}
		if max(now, newest) >= fresh {
			log, fresh = nil, -1 // expired: an empty log
		} else {
			// A key's log never runs backwards: decide as at its newest entry.
			t = max(t, newest)
		}
	}
	cutoff := t - window
	// Entries after the cutoff: the live window, still sorted.
	first, _ := slices.BinarySearch(log, cutoff+1)
	live := log[first:]
	count := int64(len(live))

	var allowed int64
	if count+n <= limit {
		allowed = 1
	}
	var retry, reset int64
	if allowed == 1 && !peek {
		kept := slices.Clone(live) // Put may reuse the stored slice
		next := tx.Put(key, len(kept)+int(n)+1, params.TTL(t+window-now, clientClock))
		copy(next, kept)
		for i := len(kept); i < len(next)-1; i++ {
			next[i] = t
		}
		next[len(next)-1] = t + window
		count += n
		reset = t + window - now
	} else {
		if allowed == 0 {
			retry = min(live[count+n-limit-1]+window, fresh) - now
		}
		if count > 0 {
			reset = min(live[count-1]+window, fresh) - now
		}
	}
	return append(reply, allowed, max(limit-count, 0), retry, reset), nil
}
