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
// connection. A call whose context has already ended sends nothing. The
// protocol is the one every ratekit Redis adapter shares. redigo does not
// retry, so a decision runs at most once. It has no cluster client: single
// node, or sentinel through the pool's Dial.
//
// Limiters are not lent keys in reused memory (the Runner is not a
// core.KeyCopier): redigo may still be writing a command's arguments after
// a call's context ends. New with a nil pool returns a Runner that limiters
// refuse when they are built (core.ErrInvalidConfig).
package redigostore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// Runner is a core.ScriptRunner and core.BatchRunner over a redigo pool.
type Runner struct {
	p       scriptproto.Runner
	plainRO bool
}

var (
	_ core.BatchRunner = (*Runner)(nil)
	_ core.Checker     = (*Runner)(nil)
	_ core.SingleNode  = (*Runner)(nil)
)

// Option configures a Runner.
type Option func(*Runner)

// WithoutReadOnlyCommands runs read-only scripts with EVALSHA and EVAL
// from the first call, for miniredis (whose EVAL_RO refuses TIME) and for
// those who want no probe on a server older than Redis 7.0. Without it, a
// store whose server answers that it lacks EVALSHA_RO sends that call
// again as EVALSHA, and every later read-only script as EVALSHA and EVAL.
// The scripts still never write; the server just no longer enforces it.
func WithoutReadOnlyCommands() Option {
	return func(r *Runner) { r.plainRO = true }
}

// New returns a Runner that runs scripts on connections from pool. It sends
// nothing to Redis.
func New(pool *redis.Pool, opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	r.p = scriptproto.New("redigo", pool, client{pool}, r.plainRO)
	r.p.SetSingleNode(true) // redigo has no cluster client
	return r
}

func (r *Runner) proto() *scriptproto.Runner {
	if r == nil {
		return nil
	}
	return &r.p
}

// RunScript runs s on one pooled connection with EVALSHA (EVALSHA_RO when
// s is read-only), and with EVAL (EVAL_RO) when the server does not know
// the script. The reply must be an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return r.proto().RunScript(ctx, s, keys, args, reply)
}

// RunScripts runs calls as one pipeline of EVALSHA on one connection (one
// round trip), then one pipeline of EVAL for the calls that met NOSCRIPT,
// which loads the script where it was missing. A call on a key of an
// earlier call waits for the next pipeline, so that calls on one key run
// in the order given even when the earlier one must be loaded.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	return r.proto().RunScripts(ctx, calls)
}

// SingleNode reports whether the client talks to one server that lets a
// script's keys span cluster slots (core.SingleNode): always, since redigo has no cluster client. Limiters
// then decide a batch of keys in any slots with one script call. A server
// that refuses such a call with CROSSSLOT (a cluster behind one address)
// makes it false from then on; that batch is sent again slot by slot.
func (r *Runner) SingleNode() bool { return r.proto().SingleNode() }

// StoreName returns "redigo" (core.StoreNamer), for metrics and traces.
func (r *Runner) StoreName() string { return "redigo" }

// Check returns an error wrapping core.ErrInvalidConfig when r cannot run
// scripts: nil, a zero value, or built with a nil pool.
func (r *Runner) Check() error { return r.proto().Check() }

// client is the scriptproto.Client of a redigo pool.
type client struct{ pool *redis.Pool }

func (k client) Do(ctx context.Context, c scriptproto.Cmd, reply []int64) ([]int64, error) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	defer conn.Close()
	v, err := redis.DoContext(conn, ctx, c.Name.String(), args(c)...)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	return scriptproto.DecodeAny(v, reply)
}

// DoMulti pipelines cmds on one connection.
func (k client) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		fail(out, ctxErr(ctx, err))
		return
	}
	defer conn.Close()
	for i, c := range cmds {
		if err := conn.Send(c.Name.String(), args(c)...); err != nil {
			// Nothing from here on was sent; what was sent is read below.
			fail(out[i:], err)
			out = out[:i]
			break
		}
	}
	if err := conn.Flush(); err != nil {
		fail(out, err)
		return
	}
	for i := range out {
		v, err := redis.ReceiveContext(conn, ctx)
		if err != nil {
			out[i].Err = ctxErr(ctx, err)
			continue
		}
		out[i].Reply, out[i].Err = scriptproto.DecodeAny(v, out[i].Reply)
	}
}

// ctxErr returns err, wrapping ctx's error too when ctx has ended, so that
// errors.Is(err, context.DeadlineExceeded) holds for a call that ran out
// of time: redigo gives the connection the context's deadline, and a read
// that reaches it fails with a net timeout (i/o timeout), which may come
// a moment before the context reports its own end.
func ctxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	var ne net.Error
	if d, ok := ctx.Deadline(); cerr == nil && ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(d) {
		cerr = context.DeadlineExceeded
	}
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}

func fail(out []core.ScriptResult, err error) {
	for i := range out {
		out[i].Err = err
	}
}

// args returns the arguments that follow the command's name: payload,
// numkeys, keys, args.
func args(c scriptproto.Cmd) []any {
	a := make([]any, 0, 2+len(c.Keys)+len(c.Args))
	a = append(a, c.Payload(), len(c.Keys))
	for _, k := range c.Keys {
		a = append(a, k)
	}
	for _, v := range c.Args {
		a = append(a, v)
	}
	return a
}
