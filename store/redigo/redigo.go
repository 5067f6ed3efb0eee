// Package redigostore runs ratekit scripts through redigo
// (github.com/gomodule/redigo), over a *redis.Pool. It lives in
// store/redigo and is named redigostore so that it never clashes with
// redigo's own package, redis:
//
//	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", "localhost:6379") }}
//	lim, err := tokenbucket.New(redigostore.New(pool), cfg)
//
// Each call takes a connection from the pool and runs EVALSHA (EVALSHA_RO
// for read-only scripts), falling back to EVAL (EVAL_RO) on NOSCRIPT;
// RunScripts (a limiter's AllowMany) pipelines a whole batch on one
// connection. redigo does not retry, so a decision runs at most once. It
// has no cluster client: single node, or sentinel through the pool's Dial.
package redigostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/slot"
)

// Runner is a core.ScriptRunner over a redigo pool.
type Runner struct {
	pool    *redis.Pool
	plainRO bool
}

var (
	_ core.ScriptRunner = (*Runner)(nil)
	_ core.BatchRunner  = (*Runner)(nil)
)

// Option configures a Runner.
type Option func(*Runner)

// WithoutReadOnlyCommands runs read-only scripts with EVALSHA and EVAL,
// for servers older than Redis 7.0 and for miniredis.
func WithoutReadOnlyCommands() Option {
	return func(r *Runner) { r.plainRO = true }
}

// New returns a Runner that runs scripts on connections from pool. It sends
// nothing to Redis.
func New(pool *redis.Pool, opts ...Option) *Runner {
	r := &Runner{pool: pool}
	for _, o := range opts {
		o(r)
	}
	return r
}

// RunScript runs s with EVALSHA (EVALSHA_RO when s is read-only), and with
// EVAL (EVAL_RO) when the server does not know the script. The reply must be
// an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if r == nil || r.pool == nil {
		return nil, errNoPool
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, crossSlot(s, keys)
	}
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: redigo: %w", core.ErrStore, err)
	}
	defer conn.Close()
	evalsha, eval := r.commands(s)
	a := cmdArgs(s, keys, args)
	v, err := redis.DoContext(conn, ctx, evalsha, a...)
	if isNoScript(err) {
		a[0] = s.Lua()
		v, err = redis.DoContext(conn, ctx, eval, a...)
	}
	return decode(s, v, err, reply)
}

// RunScripts runs calls as one pipeline of EVALSHA on one connection (one
// round trip), then one pipeline of EVAL for the calls that met NOSCRIPT,
// which loads the script where it was missing.
//
// If another client loads a missing script while the first pipeline runs,
// a later call on a key can succeed before an earlier one that met NOSCRIPT
// is retried: the two then apply in the other order. Every decision is
// still atomic and within the limit.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	fail := func(idx []int, err error) {
		for _, i := range idx {
			out[i].Err = err
		}
	}
	send := make([]int, 0, len(calls)) // indexes of the calls to send
	for i, c := range calls {
		if len(c.Keys) > 1 && !slot.Same(c.Keys) {
			out[i].Err = crossSlot(c.Script, c.Keys)
			continue
		}
		send = append(send, i)
	}
	if len(send) == 0 {
		return out
	}
	if r == nil || r.pool == nil {
		fail(send, errNoPool)
		return out
	}
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		fail(send, fmt.Errorf("%w: redigo: %w", core.ErrStore, err))
		return out
	}
	defer conn.Close()
	args := make([][]any, len(calls))
	for _, i := range send {
		args[i] = cmdArgs(calls[i].Script, calls[i].Keys, calls[i].Args)
	}
	retry := r.pipeline(ctx, conn, calls, send, args, out, false)
	if len(retry) > 0 {
		for _, i := range retry {
			args[i][0] = calls[i].Script.Lua()
		}
		r.pipeline(ctx, conn, calls, retry, args, out, true)
	}
	return out
}

// pipeline sends the calls at idx (EVAL when eval is set, EVALSHA
// otherwise), reads their replies into out, and returns the indexes of the
// calls that met NOSCRIPT.
func (r *Runner) pipeline(ctx context.Context, conn redis.Conn, calls []core.ScriptCall, idx []int, args [][]any, out []core.ScriptResult, eval bool) (noScript []int) {
	for n, i := range idx {
		evalsha, evalCmd := r.commands(calls[i].Script)
		cmd := evalsha
		if eval {
			cmd = evalCmd
		}
		if err := conn.Send(cmd, args[i]...); err != nil {
			// Nothing after this call was sent; what was sent is read below.
			for _, j := range idx[n:] {
				out[j].Err = fmt.Errorf("%w: redigo: script %q: %w", core.ErrStore, calls[j].Script.Name(), err)
			}
			idx = idx[:n]
			break
		}
	}
	if err := conn.Flush(); err != nil {
		for _, i := range idx {
			out[i].Err = fmt.Errorf("%w: redigo: script %q: %w", core.ErrStore, calls[i].Script.Name(), err)
		}
		return nil
	}
	for _, i := range idx {
		v, err := redis.ReceiveContext(conn, ctx)
		if !eval && isNoScript(err) {
			noScript = append(noScript, i)
			continue
		}
		out[i].Reply, out[i].Err = decode(calls[i].Script, v, err, nil)
	}
	return noScript
}

var errNoPool = fmt.Errorf("%w: redigo: Runner has no pool", core.ErrStore)

func crossSlot(s *core.Script, keys []string) error {
	return fmt.Errorf("%w: redigo: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
}

// commands returns the command names for s: EVALSHA and EVAL, or their
// read-only variants.
func (r *Runner) commands(s *core.Script) (evalsha, eval string) {
	if s.ReadOnly() && !r.plainRO {
		return "EVALSHA_RO", "EVAL_RO"
	}
	return "EVALSHA", "EVAL"
}

// cmdArgs returns the arguments of EVALSHA: sha1, numkeys, keys, args.
// Replacing the first with the Lua source makes them EVAL's.
func cmdArgs(s *core.Script, keys []string, args []int64) []any {
	a := make([]any, 0, 2+len(keys)+len(args))
	a = append(a, s.SHA1(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	for _, v := range args {
		a = append(a, v)
	}
	return a
}

func isNoScript(err error) bool {
	e, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(e), "NOSCRIPT")
}

// decode checks a script command's outcome: an array of integers.
func decode(s *core.Script, v any, err error, out []int64) ([]int64, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: redigo: script %q: %w", core.ErrStore, s.Name(), err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %w: redigo: script %q replied %T, want an array of integers", core.ErrStore, core.ErrUnexpectedReply, s.Name(), v)
	}
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("%w: %w: redigo: script %q reply element %d is %T, want an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i, e)
		}
		out = append(out, n)
	}
	return out, nil
}
