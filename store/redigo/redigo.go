// Package redigostore runs ratekit scripts through redigo
// (github.com/gomodule/redigo), over a *redis.Pool. It lives in
// store/redigo and is named redigostore so that it never clashes with
// redigo's own package, redis:
//
//	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", "localhost:6379") }}
//	store, err := redigostore.New(pool)
//	lim, err := tokenbucket.New(store, cfg)
//
// The store is a *scriptproto.Runner: the protocol every ratekit Redis
// adapter shares (EVALSHA with its EVAL fallback, batches, slot and
// context checks), with its options (scriptproto.WithoutReadOnlyCommands
// for Redis before 7.0 and miniredis). Each call takes a connection from
// the pool; a batch (AllowMany) is one pipeline on one connection. redigo
// does not retry, so a decision runs at most once. It has no cluster
// client: one node, or the primary behind Sentinel through the pool's
// Dial, so a batch's keys may span slots.
//
// Pool and dial options that matter to a limiter:
//   - A call ends with its context: redigo gives the read the context's
//     deadline, and closes the connection when the context ends first.
//     redis.DialReadTimeout and redis.DialWriteTimeout bound a call whose
//     context has no deadline (a net/http request's); without them such a
//     call on a server that stopped answering waits as long as the server
//     does, so bound the call (failsafe, or httplimit's Timeout).
//   - redis.DialConnectTimeout: how long a dial may take.
//   - MaxIdle: the connections kept between calls. A connection whose call
//     failed is closed, not kept, but one that died while idle (a server
//     restart) is found out by the next call that takes it, which fails;
//     TestOnBorrow (a PING for a connection idle longer than a second,
//     say) finds it first and drops it, for a round trip.
//   - MaxActive and Wait: at most MaxActive connections at once; with
//     Wait, a call waits for one (until its context ends) instead of
//     failing with redis.ErrPoolExhausted.
package redigostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// New returns the store that runs scripts on connections from pool, one
// node (scriptproto.SingleNode). It sends nothing. A nil pool is an error
// wrapping core.ErrInvalidConfig.
func New(pool *redis.Pool, opts ...scriptproto.Option) (*scriptproto.Runner, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: redigo: a nil *redis.Pool", core.ErrInvalidConfig)
	}
	own := []scriptproto.Option{scriptproto.SingleNode(true)} // redigo has no cluster client
	return scriptproto.New("redigo", client{pool}, append(own, opts...)...)
}

// client is the scriptproto.Client of a redigo pool.
type client struct{ pool *redis.Pool }

func (k client) Do(ctx context.Context, c scriptproto.Cmd, reply []int64) ([]int64, error) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	v, err := redis.DoContext(conn, ctx, c.Name.String(), args(c)...)
	if err != nil {
		return nil, err
	}
	return scriptproto.DecodeAny(v, reply)
}

// DoMulti pipelines cmds on one connection.
func (k client) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		fail(out, err)
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
			out[i].Err = err
			continue
		}
		out[i].Reply, out[i].Err = scriptproto.DecodeAny(v, out[i].Reply)
	}
}

func fail(out []core.ScriptResult, err error) {
	for i := range out {
		out[i].Err = err
	}
}

// args returns the arguments that follow the command's name: payload,
// numkeys, keys, args. Keys are copied: DoContext returns when its context
// ends while redigo may still be writing the command, and the caller may
// then reuse the memory of its keys.
func args(c scriptproto.Cmd) []any {
	a := make([]any, 0, 2+len(c.Keys)+len(c.Args))
	a = append(a, c.Payload(), len(c.Keys))
	for _, k := range c.Keys {
		a = append(a, strings.Clone(k))
	}
	for _, v := range c.Args {
		a = append(a, v)
	}
	return a
}
