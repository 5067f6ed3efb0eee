// Package goredisstore runs ratekit scripts through go-redis v9
// (github.com/redis/go-redis/v9). It lives in store/goredis and is named
// goredisstore so that it reads well beside the client, which is imported
// as redis and often aliased goredis:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	lim, err := tokenbucket.New(goredisstore.New(rdb), cfg)
//
// Any go-redis client that can run scripts works: *redis.Client,
// *redis.ClusterClient, *redis.Ring, or anything else implementing
// redis.Scripter. Each call is EVALSHA (EVALSHA_RO for read-only scripts),
// falling back to EVAL (EVAL_RO) when the server answers NOSCRIPT: after a
// restart, a failover or SCRIPT FLUSH, scripts load themselves again.
//
// Retries: go-redis retries a command after a network error (MaxRetries, 3 by
// default), so a script whose reply was lost may run twice. ratekit does not
// change the client it is given. A decision counted twice only ever denies
// more, never allows more than the limit; to run each decision at most once,
// build the client with MaxRetries: -1.
//
// A script's keys must share one cluster slot (ratekit's own scripts keep
// them under one hash tag); RunScript refuses keys in different slots on
// every topology, so that what works on one node works on a cluster.
package goredisstore

import (
	"context"
	"fmt"
	"strings"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/slot"
)

// Runner is a core.ScriptRunner over a go-redis client.
type Runner struct {
	c       redis.Scripter
	p       processor // c, when it can run a prebuilt command
	plainRO bool
}

// processor runs a prebuilt command: every go-redis client has it
// (Client, ClusterClient, Ring, AutoPipeliner, Pipeline, Conn).
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

var _ core.ScriptRunner = (*Runner)(nil)

// Option configures a Runner.
type Option func(*Runner)

// WithoutReadOnlyCommands runs read-only scripts with EVALSHA and EVAL
// instead of EVALSHA_RO and EVAL_RO: for servers older than Redis 7.0, which
// lack the _RO commands, and for miniredis, whose EVAL_RO refuses TIME. The
// scripts still never write; the server just no longer enforces it.
func WithoutReadOnlyCommands() Option {
	return func(r *Runner) { r.plainRO = true }
}

// New returns a Runner that runs scripts with c. It sends nothing to Redis.
func New(c redis.Scripter, opts ...Option) *Runner {
	r := &Runner{c: c}
	r.p, _ = c.(processor)
	for _, o := range opts {
		o(r)
	}
	return r
}

// pipeliner is what a go-redis client needs for batches; *redis.Client,
// *redis.ClusterClient and *redis.Ring all have it.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// RunScripts runs calls in one pipeline (one round trip per node on a
// cluster or ring): EVALSHA for each, then, for the calls that met
// NOSCRIPT, one more pipeline of EVAL, which loads the script where it was
// missing. go-redis pipelines have no EVAL fallback of their own. A client
// without Pipeline runs the calls one by one.
//
// If another client loads a missing script while the first pipeline runs,
// a later call on a key can succeed before an earlier one that met
// NOSCRIPT is retried: the two then apply in the other order. Every
// decision is still atomic and within the limit.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	p, ok := r.c.(pipeliner)
	if !ok {
		for i, c := range calls {
			out[i].Reply, out[i].Err = r.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
		}
		return out
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := p.Pipeline()
	for i, c := range calls {
		if len(c.Keys) > 1 && !slot.Same(c.Keys) {
			out[i].Err = fmt.Errorf("%w: goredis: script %q: keys %q are in different cluster slots", core.ErrStore, c.Script.Name(), c.Keys)
			continue
		}
		cmds[i] = r.queue(ctx, pipe, c, false)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var retry []int
	for i, cmd := range cmds {
		if cmd != nil && isNoScript(cmd.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		pipe := p.Pipeline()
		for _, i := range retry {
			cmds[i] = r.queue(ctx, pipe, calls[i], true)
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		if cmd != nil {
			out[i].Reply, out[i].Err = result(calls[i].Script, cmd, nil)
		}
	}
	return out
}

// queue adds c to pipe as EVALSHA, or as EVAL when eval is set (the
// read-only variants for read-only scripts).
func (r *Runner) queue(ctx context.Context, pipe redis.Pipeliner, c core.ScriptCall, eval bool) *redis.Cmd {
	name, payload := "evalsha", c.Script.SHA1()
	if eval {
		name, payload = "eval", c.Script.Lua()
	}
	if c.Script.ReadOnly() && !r.plainRO {
		name += "_ro"
	}
	if len(c.Keys) <= maxKeys && len(c.Args) <= maxArgs {
		return process(ctx, pipe, name, payload, c.Keys, c.Args)
	}
	a := make([]any, 0, 2+len(c.Keys)+len(c.Args))
	a = append(a, name, payload, len(c.Keys))
	for _, k := range c.Keys {
		a = append(a, strings.Clone(k))
	}
	return pipe.Do(ctx, append(a, argv(c.Args)...)...)
}

func argv(args []int64) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// CopiesKeys reports true: every key is copied before it goes to the
// client, which may hold a queued command after a call times out.
// ratekit's limiters use this to lend a key built in a reused buffer.
func (r *Runner) CopiesKeys() bool { return true }

func cloneKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.Clone(k)
	}
	return out
}

// RunScript runs s with EVALSHA (EVALSHA_RO when s is read-only), and with
// EVAL (EVAL_RO) when the server does not know the script. The reply must be
// an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if r == nil || r.c == nil {
		return nil, fmt.Errorf("%w: goredis: Runner has no client", core.ErrStore)
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, fmt.Errorf("%w: goredis: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
	}
	evalsha, eval := "evalsha", "eval"
	if s.ReadOnly() && !r.plainRO {
		evalsha, eval = "evalsha_ro", "eval_ro"
	}
	if r.p != nil && len(keys) <= maxKeys && len(args) <= maxArgs {
		cmd := process(ctx, r.p, evalsha, s.SHA1(), keys, args)
		if isNoScript(cmd.Err()) {
			cmd = process(ctx, r.p, eval, s.Lua(), keys, args)
		}
		return result(s, cmd, reply)
	}
	keys = cloneKeys(keys) // see CopiesKeys
	a := argv(args)
	var cmd *redis.Cmd
	if s.ReadOnly() && !r.plainRO {
		cmd = r.c.EvalShaRO(ctx, s.SHA1(), keys, a...)
		if isNoScript(cmd.Err()) {
			cmd = r.c.EvalRO(ctx, s.Lua(), keys, a...)
		}
	} else {
		cmd = r.c.EvalSha(ctx, s.SHA1(), keys, a...)
		if isNoScript(cmd.Err()) {
			cmd = r.c.Eval(ctx, s.Lua(), keys, a...)
		}
	}
	return result(s, cmd, reply)
}

const (
	maxKeys = 4
	maxArgs = 12
)

// frame is one command's arguments in one allocation. go-redis writes a
// *string or *int64 argument as the value it points to, and a pointer
// goes into an interface without an allocation of its own, so the command
// costs one allocation here instead of one per string and large integer.
// go-redis keeps the slice as its Cmd's arguments: a frame is never reused.
// Keys are copied into it, so the caller may reuse its key buffers.
type frame struct {
	argv [3 + maxKeys + maxArgs]any
	strs [1 + maxKeys]string
	ints [maxArgs]int64
	keys [96]byte // the keys' bytes, copied, when they fit
}

// process runs name payload numkeys keys... args... through p, as
// go-redis' own EvalSha does: the first key, if any, is argument 3 (its
// slot on a cluster).
func process(ctx context.Context, p processor, name, payload string, keys []string, args []int64) *redis.Cmd {
	cmd := redis.NewCmd(ctx, command(name, payload, keys, args)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = p.Process(ctx, cmd) // the error is also the command's
	return cmd
}

// command returns name payload numkeys keys... args... as go-redis command
// arguments. numkeys stays a plain int, as go-redis' EvalSha sends it.
func command(name, payload string, keys []string, args []int64) []any {
	f := new(frame)
	f.strs[0] = payload
	a := append(f.argv[:0], name, &f.strs[0], len(keys))
	kb := f.keys[:0]
	for i, k := range keys {
		if k != "" && len(kb)+len(k) <= cap(kb) {
			start := len(kb)
			kb = append(kb, k...) // within f.keys: no reallocation
			f.strs[1+i] = unsafe.String(&f.keys[start], len(k))
		} else {
			f.strs[1+i] = strings.Clone(k)
		}
		a = append(a, &f.strs[1+i])
	}
	for i, v := range args {
		f.ints[i] = v
		a = append(a, &f.ints[i])
	}
	return a
}

// result checks a script command's outcome and appends its reply to buf.
func result(s *core.Script, cmd *redis.Cmd, buf []int64) ([]int64, error) {
	v, err := cmd.Result()
	if err == redis.Nil {
		return nil, fmt.Errorf("%w: %w: goredis: script %q replied nil, want an array of integers", core.ErrStore, core.ErrUnexpectedReply, s.Name())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: goredis: script %q: %w", core.ErrStore, s.Name(), err)
	}
	return decode(s, v, buf)
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// decode checks the reply's shape: an array of integers, nothing else.
func decode(s *core.Script, v any, out []int64) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %w: goredis: script %q replied %T, want an array of integers", core.ErrStore, core.ErrUnexpectedReply, s.Name(), v)
	}
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("%w: %w: goredis: script %q reply element %d is %T, want an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i, e)
		}
		out = append(out, n)
	}
	return out, nil
}
