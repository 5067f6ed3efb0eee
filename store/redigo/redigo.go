// Package redigostore runs ratekit scripts through redigo
// (github.com/gomodule/redigo), over a *redis.Pool. It lives in
// store/redigo and is named redigostore so that it never clashes with
// redigo's own package, redis:
//
//	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", "localhost:6379") }}
//	lim, err := tokenbucket.New(redigostore.New(pool), cfg)
//
// Each call takes a connection from the pool and runs EVALSHA (EVALSHA_RO
// for read-only scripts), falling back to EVAL (EVAL_RO) on NOSCRIPT.
// redigo does not retry, so a decision runs at most once. It has no
// cluster client: single node, or sentinel through the pool's Dial.
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

var _ core.ScriptRunner = (*Runner)(nil)

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
		return nil, fmt.Errorf("%w: redigo: Runner has no pool", core.ErrStore)
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, fmt.Errorf("%w: redigo: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
	}
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: redigo: %w", core.ErrStore, err)
	}
	defer conn.Close()
	evalsha, eval := "EVALSHA", "EVAL"
	if s.ReadOnly() && !r.plainRO {
		evalsha, eval = "EVALSHA_RO", "EVAL_RO"
	}
	a := make([]any, 0, 2+len(keys)+len(args))
	a = append(a, s.SHA1(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	for _, v := range args {
		a = append(a, v)
	}
	v, err := redis.DoContext(conn, ctx, evalsha, a...)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT") {
		a[0] = s.Lua()
		v, err = redis.DoContext(conn, ctx, eval, a...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: redigo: script %q: %w", core.ErrStore, s.Name(), err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %w: redigo: script %q replied %T, want an array of integers", core.ErrStore, core.ErrUnexpectedReply, s.Name(), v)
	}
	out := reply
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("%w: %w: redigo: script %q reply element %d is %T, want an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i, e)
		}
		out = append(out, n)
	}
	return out, nil
}
