package concurrency

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

// A stored lease is four integers: its id (a, b), its cost n and the time
// it expires (µs). The stored value is the leases, oldest expiry first:
// the Lua sorted set's units, grouped by lease.
const (
	leaseA = iota
	leaseB
	leaseN
	leaseExpires
	leaseLen
)

// step is concurrency.lua in Go: same arguments, same reply, same steps.
// p holds the parameters, then (but for a peek) the lease's id.
func step(tx core.Tx, key string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
	now, n := c.Now, c.N
	limit, ttl := p[limit], p[ttl]

	stored, ok := tx.Get(key)
	if ok && !valid(stored) {
		return params.CorruptReply, engine.State{}
	}
	var last int64
	if ok {
		last = stored[len(stored)-1]
	}
	// The live leases, still sorted: those that expire after now.
	first := len(stored)
	for first > 0 && stored[first-1] > now {
		first -= leaseLen
	}
	live := stored[first:]
	var count int64
	for i := 0; i < len(live); i += leaseLen {
		count += live[i+leaseN]
	}
	remaining := max(limit-count, 0)
	var reset int64
	if count > 0 {
		reset = last - now
	}

	switch c.Mode {
	case engine.ModeAllow, engine.ModePeek:
		if count+n > limit {
			// The (count + n - limit)-th unit to expire frees the room for n.
			k := count + n - limit
			i := 0
			for ; k > live[i+leaseN]; i += leaseLen {
				k -= live[i+leaseN]
			}
			return engine.Reply{0, remaining, live[i+leaseExpires] - now, reset}, engine.State{}
		}
		if c.Mode == engine.ModePeek {
			return engine.Reply{1, remaining, 0, reset}, engine.State{}
		}
		expires := now + ttl
		fresh := max(last, expires)
		next := insert(live, -1, p[leaseID], p[leaseID+1], n, expires)
		return engine.Reply{1, limit - count - n, 0, fresh - now}, engine.State{Write: true, TTL: params.TTL(fresh-now, c.ClientClock), List: next}
	}

	// Release or extend: the lease is live when it is stored and expires
	// after now.
	a, b := p[leaseID], p[leaseID+1]
	at := -1
	for i := 0; i < len(stored); i += leaseLen {
		if stored[i+leaseA] == a && stored[i+leaseB] == b && stored[i+leaseN] == n {
			at = i
			break
		}
	}
	if at < 0 || stored[at+leaseExpires] <= now {
		return engine.Reply{0, remaining, 0, reset}, engine.State{}
	}
	at -= first // its index in live

	if c.Mode == modeRelease {
		next := make([]int64, 0, len(live)-leaseLen)
		next = append(append(next, live[:at]...), live[at+leaseLen:]...)
		var rst int64
		if len(next) > 0 {
			rst = next[len(next)-1] - now
		}
		// An empty List deletes the key (engine.ArgsScript).
		return engine.Reply{1, max(limit-(count-n), 0), 0, rst}, engine.State{Write: true, TTL: params.TTL(rst, c.ClientClock), List: next}
	}

	// Extend: the lease lives ttl from now, and never less than it did.
	expires := max(live[at+leaseExpires], now+ttl)
	fresh := max(last, expires)
	next := insert(live, at, a, b, n, expires)
	return engine.Reply{1, remaining, 0, fresh - now}, engine.State{Write: true, TTL: params.TTL(fresh-now, c.ClientClock), List: next}
}

// insert returns a new list: live without the lease at index skip (none
// when skip < 0), and the lease (a, b, n, expires) after every lease that
// expires no later.
func insert(live []int64, skip int, a, b, n, expires int64) []int64 {
	next := make([]int64, 0, len(live)+leaseLen)
	added := false
	for i := 0; i < len(live); i += leaseLen {
		if i == skip {
			continue
		}
		if !added && live[i+leaseExpires] > expires {
			next = append(next, a, b, n, expires)
			added = true
		}
		next = append(next, live[i:i+leaseLen]...)
	}
	if !added {
		next = append(next, a, b, n, expires)
	}
	return next
}

// valid reports whether stored is a list of leases the step wrote: at
// least one, each of a positive cost, their expiries in [0, MaxState] and
// in order.
func valid(stored []int64) bool {
	if len(stored) == 0 || len(stored)%leaseLen != 0 {
		return false
	}
	prev := int64(0)
	for i := 0; i < len(stored); i += leaseLen {
		n, e := stored[i+leaseN], stored[i+leaseExpires]
		if n < 1 || n > params.MaxCount || e < prev || e > params.MaxState {
			return false
		}
		prev = e
	}
	return true
}
