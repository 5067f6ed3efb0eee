package slidinglog

import (
	"slices"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// step is slidinglog.lua in Go: same arguments, same reply, same steps.
// The stored value is the sorted list of the times (µs) of allowed units of
// cost, oldest first, followed by the time the log expires (the "~" member
// of the Lua sorted set).
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n, peek, refund := c.Now, c.N, c.Mode == engine.ModePeek, c.Mode == engine.ModeRefund
	limit, window := p[limit], p[window]

	stored, ok := tx.Get(key)
	t, fresh := now, int64(-1)
	var log []int64
	if ok {
		if len(stored) < 2 {
			return params.CorruptReply, engine.State{}
		}
		log, fresh = stored[:len(stored)-1], stored[len(stored)-1]
		oldest, newest := log[0], log[len(log)-1]
		if oldest < 0 || oldest > newest || fresh <= newest || fresh > params.MaxState {
			return params.CorruptReply, engine.State{}
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

	var st engine.State
	if refund {
		k := min(n, count)
		n, peek = 1, true
		if k > 0 {
			count -= k
			live = live[:count]
			if count == 0 {
				st.Write, st.List = true, []int64{} // deletes the key
			} else {
				next := engine.Scratch(tx, int(count)+1)[:count]
				copy(next, live)
				st = engine.State{Write: true, TTL: params.TTL(fresh-now, c.ClientClock), List: append(next, fresh)}
			}
		}
	}

	var allowed int64
	if count+n <= limit {
		allowed = 1
	}
	var retry, reset int64
	if allowed == 1 && !peek {
		// The new log, built once in memory of its own (live belongs to
		// tx), lent by the store for the call: the live entries, n
		// entries at t, then the expiry mark.
		next := engine.Scratch(tx, len(live)+int(n)+1)[:len(live)]
		copy(next, live)
		for range n {
			next = append(next, t)
		}
		next = append(next, t+window)
		count += n
		reset = t + window - now
		st = engine.State{Write: true, TTL: params.TTL(reset, c.ClientClock), List: next}
	} else {
		if allowed == 0 {
			retry = min(live[count+n-limit-1]+window, fresh) - now
		}
		if count > 0 {
			reset = min(live[count-1]+window, fresh) - now
		}
	}
	return engine.Reply{allowed, max(limit-count, 0), retry, reset}, st
}
