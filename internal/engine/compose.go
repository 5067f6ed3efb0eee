package engine

import (
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// The scripts a store runs are composed from steps: the prelude, each
// step's Lua (a function named after its algorithm), then a few lines that
// read the arguments and decide each request of the call against every
// limit, writing what the steps staged. The Go twin (shape.twin) does the
// same with the steps' Go twins, through the same function the in-process
// path runs (shape.decide), so the memory store is the reference for every
// composed script.
//
// One layout serves every call: one decision, a batch (AllowMany,
// coalescing), a policy's decision and a batch of them. Every time is in
// µs; now = -1 reads the server's TIME.
//
//	KEYS = for each request: one key per limit, in order, then the
//	       penalty key when the shape has one
//	ARGV = now, mode, then for each limit: (shadow, penalty_us, in a
//	       policy) its params, then one n per request, or one n for every
//	       request
//
// A step is called as name(key, now, client_clock, n, mode, params...),
// its parameters in the order of Spec.Params, and returns allowed,
// remaining, retry_us, reset_us, then what it writes: value, ttl_us and
// write. A string value is the key's new value, set with a TTL of ttl_us
// (or keeping the key's TTL when ttl_us is false); a false value deletes
// the key; write, a function, writes what the step
// staged in it (a sorted set's members); nil writes nothing (the prelude's
// commit). The parameters as arguments and the value as a string keep the
// step free of tables and closures on its common path: on the server those
// cost more than the step's arithmetic.
//
// Each request's reply is four integers per limit (allowed, remaining,
// retry_after_us, reset_after_us); a policy's adds two, the penalty
// block's: {blocked_until_us - now, 1} when the key is blocked, {0, 0}
// when not, and {CORRUPT, 0} when the penalty key holds anything else.
//
// A policy (shape.policy):
//
//   - The request is allowed when every enforced limit allows it and the
//     key is not blocked; then every limit counts it. When any enforced
//     limit denies, nothing is counted anywhere.
//   - A shadow limit decides and counts like the others, but its denial
//     never denies the request (shadow = 1).
//   - A penalty (penalty_us > 0): when that limit denies an allowed-mode
//     request, the key is blocked for penalty_us: the block is the
//     penalty key, written with the denial in the same script. While it
//     holds, every request is denied and its limits only report (as a
//     Peek).
//   - ModeRefund refunds every limit (each step writes what it gives back),
//     blocked or not; ModePeek writes nothing.
//   - When a request is denied, the limits that would have allowed it
//     report their Remaining and reset as a Peek would: it counted nothing.

// shape is what a composed script decides: the steps of its limits, in
// order, and whether it is a policy's.
type shape struct {
	specs []*Spec
	// policy: each limit takes shadow and penalty_us before its
	// parameters, and each request's reply ends with the block's two
	// integers.
	policy bool
	// penalty: a penalty key follows each request's limit keys (a policy
	// with a limit that has a Penalty).
	penalty bool
}

// keys returns the storage keys of one request.
func (sh *shape) keys() int {
	if sh.penalty {
		return len(sh.specs) + 1
	}
	return len(sh.specs)
}

// replyLen returns the integers of one request's reply.
func (sh *shape) replyLen() int {
	if sh.policy {
		return 4*len(sh.specs) + 2
	}
	return 4 * len(sh.specs)
}

// limitArgs returns the arguments of limit i: its parameters, after its
// shadow and penalty in a policy.
func (sh *shape) limitArgs(i int) int {
	if sh.policy {
		return 2 + len(sh.specs[i].Params)
	}
	return len(sh.specs[i].Params)
}

// name names the composed script: the algorithm's, or policy:a+b.
func (sh *shape) name() string {
	if !sh.policy {
		return sh.specs[0].Name
	}
	names := make([]string, len(sh.specs))
	for i, s := range sh.specs {
		names[i] = s.Name
	}
	return "policy:" + strings.Join(names, "+")
}

// compose returns the shape's script, read-write and read-only (Peek):
// one Lua source, run with EVALSHA and EVALSHA_RO.
func (sh shape) compose() (rw, ro *core.Script) {
	twin := sh.twin
	head, body := sh.lua()
	rw = core.NewSplitScript(sh.name(), head, body, twin, false)
	ro = core.NewSplitScript(sh.name(), head, body, twin, true)
	return rw, ro
}

// lua returns the shape's Lua source: its head (the prelude and the
// steps, which only define functions) and its body (what each call runs).
func (sh *shape) lua() (head, body string) {
	var h strings.Builder
	h.WriteString(prelude + "\n")
	seen := map[string]bool{}
	for _, s := range sh.specs {
		if !seen[s.Name] {
			seen[s.Name] = true
			h.WriteString(strings.TrimSpace(s.Lua) + "\n")
		}
	}
	var b strings.Builder
	L, K, R := len(sh.specs), sh.keys(), sh.replyLen()
	fmt.Fprintf(&b, "-- %s: each request against %d limit(s). Per request KEYS: one per limit", sh.name(), L)
	if sh.penalty {
		b.WriteString(", then the penalty key")
	}
	b.WriteString(".\n-- ARGV = now_us, mode, then per limit: ")
	if sh.policy {
		b.WriteString("shadow, penalty_us, ")
	}
	b.WriteString("its params; then n per request, or one n.\n")
	b.WriteString("local now, client_clock = clock(ARGV[1] + 0)\nlocal mode = ARGV[2] + 0\n")
	at := 3
	for i, s := range sh.specs {
		if sh.policy {
			fmt.Fprintf(&b, "local s%[1]d, pen%[1]d = ARGV[%[2]d] + 0, ARGV[%[3]d] + 0\n", i+1, at, at+1)
			at += 2
		}
		if k := len(s.Params); k > 0 {
			fmt.Fprintf(&b, "local %s = %s\n", locals(i+1, k), luaArgs(k, at))
			at += k
		}
	}
	// at is the first cost. A call of one request has one cost.
	if !sh.policy {
		// One request of one limit, the most common call, goes straight,
		// as a script of its own would: no loop, no table grown, and the
		// reply made at once (a loop of one cost the server 6% more per
		// decision: callgrind on redis-server, "What a script costs").
		s := sh.specs[0]
		fmt.Fprintf(&b, "if #KEYS == 1 then\n")
		fmt.Fprintf(&b, "  local allowed, remaining, retry, reset, value, ttl, write = %s(KEYS[1], now, client_clock, ARGV[%d] + 0, mode%s)\n", s.Name, at, paramList(1, len(s.Params)))
		b.WriteString("  commit(KEYS[1], value, ttl, client_clock, write)\n  return {allowed, remaining, retry, reset}\nend\n")
	}
	fmt.Fprintf(&b, "local one = #ARGV == %d\n", at)
	if sh.policy {
		fmt.Fprintf(&b, "local out\nif #KEYS == %d then out = {%s} else out = {} end\n", K, strings.TrimSuffix(strings.Repeat("0, ", R), ", "))
	} else {
		b.WriteString("local out = {}\n")
	}
	fmt.Fprintf(&b, "for r = 0, #KEYS / %d - 1 do\n", K)
	fmt.Fprintf(&b, "  local n = ARGV[%d + (one and 0 or r)] + 0\n", at)
	fmt.Fprintf(&b, "  local k, o = r * %d, r * %d\n", K, R)
	if !sh.policy {
		for i, s := range sh.specs {
			fmt.Fprintf(&b, "  local allowed, remaining, retry, reset, value, ttl, write = %s(KEYS[k + %d], now, client_clock, n, mode%s)\n", s.Name, i+1, paramList(i+1, len(s.Params)))
			fmt.Fprintf(&b, "  commit(KEYS[k + %d], value, ttl, client_clock, write)\n", i+1)
			fmt.Fprintf(&b, "  out[o + %d], out[o + %d], out[o + %d], out[o + %d] = allowed, remaining, retry, reset\n", 4*i+1, 4*i+2, 4*i+3, 4*i+4)
		}
		b.WriteString("end\nreturn out\n")
		return inject(h.String()), inject(b.String())
	}
	if sh.penalty {
		fmt.Fprintf(&b, "  local block = KEYS[k + %d]\n", L+1)
	} else {
		b.WriteString("  local block = nil\n")
	}
	b.WriteString("  local until_us, corrupt = 0, false\n")
	b.WriteString("  if block then\n    local bs = read_state(block, 1)\n    if bs == false then corrupt = true elseif bs and bs > now then until_us = bs end\n  end\n")
	fmt.Fprintf(&b, "  if corrupt then\n    out[o + %d], out[o + %d] = CORRUPT, 0\n  else\n", 4*L+1, 4*L+2)
	b.WriteString("  local blocked = until_us > 0\n  local step_mode = mode\n  if blocked and mode == MODE_ALLOW then step_mode = MODE_PEEK end\n")
	b.WriteString("  local all, penalty = not blocked, 0\n  local allowed, remaining, retry, reset\n")
	// Each limit's writes wait in locals (v1, t1, w1, ...) until every
	// limit has decided: a table or a closure per limit would cost the
	// server more than the decision.
	for i, s := range sh.specs {
		fmt.Fprintf(&b, "  local v%[1]d, t%[1]d, w%[1]d\n", i+1)
		fmt.Fprintf(&b, "  allowed, remaining, retry, reset, v%[1]d, t%[1]d, w%[1]d = %[2]s(KEYS[k + %[1]d], now, client_clock, n, step_mode%[3]s)\n", i+1, s.Name, paramList(i+1, len(s.Params)))
		fmt.Fprintf(&b, "  out[o + %d], out[o + %d], out[o + %d], out[o + %d] = allowed, remaining, retry, reset\n", 4*i+1, 4*i+2, 4*i+3, 4*i+4)
		fmt.Fprintf(&b, "  if allowed ~= 1 and s%[1]d == 0 then\n    all = false\n    if pen%[1]d > penalty then penalty = pen%[1]d end\n  end\n", i+1)
	}
	// A denied request counted nothing: the limits that allowed it report
	// their state as a Peek would, not as if they had counted it.
	b.WriteString("  if mode == MODE_ALLOW and not all and not blocked then\n")
	for i, s := range sh.specs {
		fmt.Fprintf(&b, "    if out[o + %d] == 1 then\n      allowed, remaining, retry, reset = %s(KEYS[k + %d], now, client_clock, n, MODE_PEEK%s)\n      out[o + %d], out[o + %d] = remaining, reset\n    end\n", 4*i+1, s.Name, i+1, paramList(i+1, len(s.Params)), 4*i+2, 4*i+4)
	}
	b.WriteString("  end\n  if mode == MODE_REFUND or (mode == MODE_ALLOW and all) then\n")
	for i := range sh.specs {
		fmt.Fprintf(&b, "    commit(KEYS[k + %[1]d], v%[1]d, t%[1]d, client_clock, w%[1]d)\n", i+1)
	}
	b.WriteString("  elseif mode == MODE_ALLOW and not blocked and penalty > 0 and block then\n    until_us = now + penalty\n    commit(block, state(until_us), penalty, client_clock)\n  end\n")
	fmt.Fprintf(&b, "  if until_us > 0 then out[o + %[1]d], out[o + %[2]d] = until_us - now, 1 else out[o + %[1]d], out[o + %[2]d] = 0, 0 end\n", 4*L+1, 4*L+2)
	b.WriteString("  end\nend\nreturn out\n")
	return inject(h.String()), inject(b.String())
}

// locals returns the names of limit i's k parameters: "p1_1, p1_2".
func locals(i, k int) string {
	names := make([]string, k)
	for j := range names {
		names[j] = fmt.Sprintf("p%d_%d", i, j+1)
	}
	return strings.Join(names, ", ")
}

// paramList returns ", p1_1, p1_2" for limit i's k parameters.
func paramList(i, k int) string {
	if k == 0 {
		return ""
	}
	return ", " + locals(i, k)
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

// twin is the composed script's Lua in Go (core.TwinFunc).
func (sh shape) twin(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
	c := call(tx, args[0])
	c.Mode = Mode(args[1])
	at := 2
	for i := range sh.specs {
		at += sh.limitArgs(i)
	}
	limits, costs := args[2:at], args[at:]
	K := sh.keys()
	for r := 0; r+K <= len(keys); r += K {
		c.N = costs[0]
		if len(costs) > 1 {
			c.N = costs[r/K]
		}
		reply = sh.decide(tx, keys[r:r+K], c, limits, reply)
	}
	return reply, nil
}

// decide decides one request, c, on its keys with the limits' arguments
// (ARGV's, after now and mode), and appends its reply: what the composed
// script does for each request, for the twin and for the in-process path
// alike.
func (sh *shape) decide(tx core.Tx, keys []string, c Call, args []int64, reply []int64) []int64 {
	if !sh.policy {
		// One limit: small enough to inline, as the in-process path needs.
		r, st := sh.specs[0].Step(tx, keys[0], c, argsOf(args))
		commit(tx, keys[0], &st)
		return append(reply, r[0], r[1], r[2], r[3])
	}
	return sh.decidePolicy(tx, keys, c, args, reply)
}

// decidePolicy is decide for a policy.
func (sh *shape) decidePolicy(tx core.Tx, keys []string, c Call, args []int64, reply []int64) []int64 {
	L := len(sh.specs)
	var until int64
	if sh.penalty {
		if v, ok := tx.Get(keys[L]); ok {
			if !params.State(v, 1) {
				for range 4 * L {
					reply = append(reply, 0)
				}
				return append(reply, params.Corrupt, 0)
			}
			if v[0] > c.Now {
				until = v[0]
			}
		}
	}
	blocked := until > 0
	mode := c.Mode
	if blocked && mode == ModeAllow {
		c.Mode = ModePeek
	}
	// No allocation, and no more zeroed than a policy of a few limits
	// needs (a State is 96 bytes): Go zeroes an array where it is
	// declared.
	var states []State
	var small [4]State
	if L <= len(small) {
		states = small[:L]
	} else {
		var large [MaxLimits]State
		states = large[:L]
	}
	base := len(reply)
	all := !blocked
	var penalty int64
	at := 0
	for i, s := range sh.specs {
		shadow, pen := args[at], args[at+1]
		p := argsOf(args[at+2 : at+2+len(s.Params)])
		at += 2 + len(s.Params)
		r, st := s.Step(tx, keys[i], c, p)
		states[i] = st
		reply = append(reply, r[:]...)
		if r[0] != 1 && shadow == 0 {
			all = false
			penalty = max(penalty, pen)
		}
	}
	if mode == ModeAllow && !all && !blocked {
		peek := c
		peek.Mode = ModePeek
		at = 0
		for i, s := range sh.specs {
			if d := reply[base+4*i:]; d[0] == 1 {
				r, _ := s.Step(tx, keys[i], peek, argsOf(args[at+2:at+2+len(s.Params)]))
				d[1], d[3] = r[1], r[3]
			}
			at += 2 + len(s.Params)
		}
	}
	switch {
	case mode == ModeRefund || (mode == ModeAllow && all):
		for i := range sh.specs {
			commit(tx, keys[i], &states[i])
		}
	case mode == ModeAllow && !blocked && penalty > 0 && sh.penalty:
		until = c.Now + penalty
		tx.Put(keys[L], 1, params.TTL(penalty, c.ClientClock))[0] = until
	}
	if until > 0 {
		return append(reply, until-c.Now, 1)
	}
	return append(reply, 0, 0)
}
