package engine

import (
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// PolicyScript composes the script that decides one request on several
// limits of one user key at once (ratekit.Policy):
//
//   - The request is allowed when every enforced limit allows it and the
//     key is not blocked; then every limit that allowed it counts it. When
//     any enforced limit denies, nothing is counted anywhere.
//   - A shadow limit decides and counts like the others, but its denial
//     never denies the request (ARGV shadow = 1).
//   - A penalty (ARGV penalty_us > 0): when that limit denies an allowed-
//     mode request, the key is blocked for penalty_us; the block is the
//     penalty key (KEYS after the limits' keys), written with the denial in
//     the same script. While it holds, every request is denied and its
//     limits only report (as a Peek).
//   - ModeRefund refunds every limit (each step writes what it gives back),
//     blocked or not; ModePeek writes nothing.
//   - When a request is denied, the limits that would have allowed it
//     report their Remaining and reset as a Peek would: it counted nothing.
//
// The reply holds the four integers of each limit's decision, in order,
// then the block's: {blocked_until_us - now, 1} when the key is blocked,
// {0, 0} when not, and params.CorruptReply's first two integers (-1, 0)
// when the penalty key holds anything else.
func PolicyScript(specs []*Spec) *core.Script {
	var b strings.Builder
	b.WriteString(prelude + "\n")
	names := make([]string, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		names[i] = s.Name
		if !seen[s.Name] {
			seen[s.Name] = true
			b.WriteString(strings.TrimSpace(s.Lua) + "\n\n")
		}
	}
	name := "policy:" + strings.Join(names, "+")
	fmt.Fprintf(&b, `-- %[1]s: one request on %[2]d limits; counted by all of them, or by none.
-- KEYS[i] is limit i's key, KEYS[%[3]d] the penalty key if any; ARGV = now_us,
-- n, mode, then for each limit: shadow, penalty_us, its parameters.
local now, client_clock = clock(ARGV[1] + 0)
local n, mode = ARGV[2] + 0, ARGV[3] + 0
local block = KEYS[%[3]d]
local until_us = 0
if block then
  local b = read_state(block, 1)
  if b == false then
    local out = {}
    for i = 1, %[4]d do out[i] = 0 end
    out[%[4]d + 1], out[%[4]d + 2] = -1, 0
    return out
  end
  if b and b > now then until_us = b end
end
local blocked = until_us > 0
local step_mode = mode
if blocked and mode == 0 then step_mode = 1 end
local out, all, penalty = {}, not blocked, 0
local allowed, remaining, retry, reset, shadow, pen
`, name, len(specs), len(specs)+1, 4*len(specs))
	// Each limit's writes wait in locals (v1, t1, w1, ...) until
	// every limit has decided: a table or a closure per limit would cost
	// the server more than the decision.
	at := 4
	for i, s := range specs {
		k := len(s.Params)
		fmt.Fprintf(&b, "local v%[1]d, t%[1]d, w%[1]d\n", i+1)
		fmt.Fprintf(&b, "shadow, pen = ARGV[%d] + 0, ARGV[%d] + 0\n", at, at+1)
		fmt.Fprintf(&b, "allowed, remaining, retry, reset, v%[1]d, t%[1]d, w%[1]d = %[2]s(KEYS[%[1]d], now, client_clock, n, step_mode, %[3]s)\n", i+1, s.Name, luaArgs(k, at+2))
		fmt.Fprintf(&b, "out[%d], out[%d], out[%d], out[%d] = allowed, remaining, retry, reset\n", 4*i+1, 4*i+2, 4*i+3, 4*i+4)
		b.WriteString("if allowed ~= 1 and shadow == 0 then\n  all = false\n  if pen > penalty then penalty = pen end\nend\n")
		at += 2 + k
	}
	// A denied request counted nothing: the limits that allowed it report
	// their state as a Peek would, not as if they had counted it.
	b.WriteString("if mode == 0 and not all and not blocked then\n")
	at = 4
	for i, s := range specs {
		k := len(s.Params)
		fmt.Fprintf(&b, "  if out[%d] == 1 then\n    allowed, remaining, retry, reset = %s(KEYS[%d], now, client_clock, n, 1, %s)\n    out[%d], out[%d] = remaining, reset\n  end\n", 4*i+1, s.Name, i+1, luaArgs(k, at+2), 4*i+2, 4*i+4)
		at += 2 + k
	}
	b.WriteString("end\nif mode == 3 or (mode == 0 and all) then\n")
	for i := range specs {
		fmt.Fprintf(&b, "  commit(KEYS[%[1]d], v%[1]d, t%[1]d, client_clock, w%[1]d)\n", i+1)
	}
	fmt.Fprintf(&b, `elseif mode == 0 and not blocked and penalty > 0 and block then
  until_us = now + penalty
  commit(block, state(until_us), penalty, client_clock)
end
if until_us > 0 then
  out[%[1]d + 1], out[%[1]d + 2] = until_us - now, 1
else
  out[%[1]d + 1], out[%[1]d + 2] = 0, 0
end
return out
`, 4*len(specs))
	return core.NewScript(name, b.String(), policyTwin(specs), false)
}

// policyTwin is PolicyScript's Lua in Go.
func policyTwin(specs []*Spec) core.TwinFunc {
	return func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
		c := call(tx, args[0])
		n, mode := args[1], args[2]
		var block string
		var until int64
		if len(keys) > len(specs) {
			block = keys[len(specs)]
			if v, ok := tx.Get(block); ok {
				if !params.State(v, 1) {
					for range 4 * len(specs) {
						reply = append(reply, 0)
					}
					return append(reply, -1, 0), nil
				}
				if v[0] > c.Now {
					until = v[0]
				}
			}
		}
		blocked := until > 0
		c.N, c.Mode = n, mode
		if blocked && mode == ModeAllow {
			c.Mode = ModePeek
		}
		var buf [16]State // ratekit.MaxPolicyLimits: no allocation
		states := buf[:0]
		if len(specs) > len(buf) {
			states = make([]State, 0, len(specs))
		}
		states = states[:len(specs)]
		base := len(reply)
		all := !blocked
		var penalty int64
		at := 3
		for i, s := range specs {
			shadow, pen := args[at], args[at+1]
			r, st := s.Step(tx, keys[i], c, args[at+2:at+2+len(s.Params)])
			at += 2 + len(s.Params)
			states[i] = st
			reply = append(reply, r[:]...)
			if r[0] != 1 && shadow == 0 {
				all = false
				penalty = max(penalty, pen)
			}
		}
		if mode == ModeAllow && !all && !blocked {
			at, peek := 3, c
			peek.Mode = ModePeek
			for i, s := range specs {
				if d := reply[base+4*i:]; d[0] == 1 {
					r, _ := s.Step(tx, keys[i], peek, args[at+2:at+2+len(s.Params)])
					d[1], d[3] = r[1], r[3]
				}
				at += 2 + len(s.Params)
			}
		}
		switch {
		case mode == ModeRefund || (mode == ModeAllow && all):
			for i := range specs {
				commit(tx, keys[i], &states[i])
			}
		case mode == ModeAllow && !blocked && penalty > 0 && block != "":
			until = c.Now + penalty
			tx.Put(block, 1, params.TTL(penalty, c.ClientClock))[0] = until
		}
		if until > 0 {
			return append(reply, until-c.Now, 1), nil
		}
		return append(reply, 0, 0), nil
	}
}
