package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// A step may take arguments of the call besides the parameters its Spec
// declares: the concurrency limiter's lease id, which differs at every
// call. ArgsScript composes its script, and Engine.RunArgs runs it.
//
//	KEYS = {key}; ARGV = now, n, mode, params..., args...
//
// The reply is the usual four integers.

// ArgsScript composes the one-decision script of s for a step that also
// takes the call's arguments named names, after its parameters. In Lua the
// step takes each as an argument after its parameters, named as in names,
// as the decimal string the store was sent, not a Lua number, so that any
// int64 stays exact; the Go twin finds them in p after the parameters, as
// int64s (parameters and arguments: at most four, Args). name names the
// script.
//
// The twin's step may also stage the deletion of its key, as a Lua step
// that removes the last member of a set does: a State whose List is empty
// but not nil deletes the key.
func ArgsScript(s *Spec, name string, names []string) *core.Script {
	checkSignature(s, false, names...)
	if len(s.Params)+len(names) > maxParams {
		panic(fmt.Sprintf("engine: %s takes %d parameters and arguments, more than %d", name, len(s.Params)+len(names), maxParams))
	}
	all := make([]string, 0, len(s.Params)+len(names))
	args := make([]string, 0, len(s.Params)+len(names))
	for i, prm := range s.Params {
		all = append(all, prm.Name)
		args = append(args, fmt.Sprintf("ARGV[%d] + 0", 4+i))
	}
	for i, n := range names {
		all = append(all, n)
		args = append(args, fmt.Sprintf("ARGV[%d]", 4+len(s.Params)+i))
	}
	head := inject(prelude + "\n" + strings.TrimSpace(s.Lua) + "\n")
	body := inject(fmt.Sprintf(`-- %[1]s: one call. KEYS[1] is the key; ARGV = now_us, n, mode, %[2]s.
local now, client_clock = clock(ARGV[1] + 0)
local allowed, remaining, retry, reset, value, ttl, write = %[3]s(KEYS[1], now, client_clock,
  ARGV[2] + 0, ARGV[3] + 0, %[4]s)
commit(KEYS[1], value, ttl, client_clock, write)
return {allowed, remaining, retry, reset}
`, name, strings.Join(all, ", "), s.Name, strings.Join(args, ", ")))
	twin := func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
		c := call(tx, args[0])
		c.N, c.Mode = args[1], Mode(args[2])
		r, st := s.Step(tx, keys[0], c, argsOf(args[3:]))
		commit(tx, keys[0], &st)
		return append(reply, r[:]...), nil
	}
	return core.NewSplitScript(name, head, body, twin, false)
}

// RunArgs runs script (composed by ArgsScript from the Spec of e's one
// limit) for key at cost n in mode with the call's args, and decodes its
// reply. It checks the key, the clock and the context as Decide does, and
// n to be between 1 and the most a count may be.
func (e *Engine) RunArgs(ctx context.Context, script *core.Script, key string, n int64, mode Mode, args ...int64) (core.Decision, error) {
	now, err := e.check(ctx, key, n, params.MaxCount)
	if err != nil {
		return core.Decision{}, err
	}
	argv := make([]int64, 0, 3+len(e.args)+len(args))
	argv = append(argv, now, n, int64(mode))
	argv = e.appendArgs(argv, now, nil)
	argv = append(argv, args...)
	reply, err := e.runner.RunScript(ctx, script, []string{keyspace.Key(e.limits[0].Prefix, key, "")}, argv, nil)
	if err != nil {
		return core.Decision{}, err
	}
	return e.decode(key, reply, nil)
}
