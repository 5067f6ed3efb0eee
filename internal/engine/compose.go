package engine

import (
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/core"
)

// The scripts a store runs are composed from steps: the prelude, each
// step's Lua (a function named after its algorithm), then a few lines that
// read the arguments, call the steps and write what they staged. Their Go
// twins compose the steps' Go twins the same way, so the memory store stays
// the reference for every composed script.
//
// ARGV layouts (every time in µs; now = -1 reads the server's TIME):
//
//	one decision   KEYS = {key}; ARGV = now, n, mode, params...
//	batch          KEYS = keys;  ARGV = now, params..., then n for each
//	               key, or one n for every key; every decision AllowN
//	policy         KEYS = one key per limit, then the penalty key if any;
//	               ARGV = now, n, mode, then for each limit: shadow (0 or
//	               1), penalty_us (0 for none) and its params
//
// A step is called as name(key, now, client_clock, n, mode, params...),
// its parameters in the order of Spec.Params, and returns allowed,
// remaining, retry_us, reset_us, then what it writes: value, ttl_us and
// write. A string value is the key's new value, set with a TTL of ttl_us;
// a false value deletes the key; write, a function, writes what the step
// staged in it (a sorted set's members); nil writes nothing (the prelude's
// commit). The composed script runs the writes: at once for one decision
// or a batch, only when the whole call is allowed for a policy. The
// parameters as arguments and the value as a string keep the step free of
// tables and closures on its common path: on the server those cost more
// than the step's arithmetic.
//
// Every reply holds four integers per decision: allowed, remaining,
// retry_after_us, reset_after_us; a policy's reply ends with two more, the
// penalty block's (see PolicyScript).

func header(s *Spec) string {
	return prelude + "\n" + strings.TrimSpace(s.Lua) + "\n\n"
}

func singleLua(s *Spec) string {
	return header(s) + fmt.Sprintf(`-- %[1]s: one decision. KEYS[1] is the key; ARGV = now_us, n, mode, %[2]s.
local now, client_clock = clock(ARGV[1] + 0)
local allowed, remaining, retry, reset, value, ttl, write = %[1]s(KEYS[1], now, client_clock,
  ARGV[2] + 0, ARGV[3] + 0, %[3]s)
commit(KEYS[1], value, ttl, client_clock, write)
return {allowed, remaining, retry, reset}
`, s.Name, paramNames(s), luaArgs(len(s.Params), 4))
}

func batchLua(s *Spec) string {
	k := len(s.Params)
	return header(s) + fmt.Sprintf(`-- %[1]s: one decision per key, in order, at one time.
-- ARGV = now_us, %[2]s, then n for each key, or one n for every key.
local now, client_clock = clock(ARGV[1] + 0)
local %[3]s = %[4]s
local same = #ARGV == %[5]d
local n = same and ARGV[%[5]d] + 0
local out = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if not same then n = ARGV[%[6]d + i] + 0 end
  local allowed, remaining, retry, reset, value, ttl, write = %[1]s(key, now, client_clock,
    n, %[7]d, %[3]s)
  commit(key, value, ttl, client_clock, write)
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = allowed, remaining, retry, reset
end
return out
`, s.Name, paramNames(s), luaLocals(k), luaArgs(k, 2), k+2, k+1, ModeAllow)
}

func paramNames(s *Spec) string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// call reads now, client_clock from a script's first argument.
func call(tx core.Tx, now int64) Call {
	if now < 0 {
		return Call{Now: tx.Now()}
	}
	return Call{Now: now, ClientClock: true}
}

// commit writes what a step staged.
func commit(tx core.Tx, key string, st *State) {
	switch {
	case !st.Write:
	case st.List != nil && len(st.List) == 0:
		tx.Del(key)
	case st.List != nil:
		copy(tx.Put(key, len(st.List), st.TTL), st.List)
	default:
		v := tx.Put(key, st.N, st.TTL)
		for i := range v { // a few values: cheaper than copy's memmove
			v[i] = st.Vals[i]
		}
	}
}

func singleTwin(s *Spec) core.TwinFunc {
	return func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
		c := call(tx, args[0])
		c.N, c.Mode = args[1], args[2]
		r, st := s.Step(tx, keys[0], c, args[3:])
		commit(tx, keys[0], &st)
		return append(reply, r[:]...), nil
	}
}

func batchTwin(s *Spec) core.TwinFunc {
	return func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
		c := call(tx, args[0])
		c.Mode = ModeAllow
		k := len(s.Params)
		p := args[1 : 1+k]
		costs, same := args[1+k:], len(args) == k+2
		for i, key := range keys {
			if same {
				c.N = costs[0]
			} else {
				c.N = costs[i]
			}
			r, st := s.Step(tx, key, c, p)
			commit(tx, key, &st)
			reply = append(reply, r[:]...)
		}
		return reply, nil
	}
}
