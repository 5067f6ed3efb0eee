// Package redigostore runs ratekit scripts through redigo
// (github.com/gomodule/redigo), over a *redis.Pool. It lives in
// store/redigo and is named redigostore so that it never clashes with
// redigo's own package, redis:
//
//	pool := &redis.Pool{MaxIdle: 16, DialContext: func(ctx context.Context) (redis.Conn, error) {
//		return redis.DialContext(ctx, "tcp", "localhost:6379", redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
//	}}
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
// A call that breaks its connection (the server closed it: a restart, a
// crash; not a timeout) tells the store that the connections idle in the
// pool may be dead too: before that call returns its error, the store
// takes the pool's idle connections, sends each a PING, and closes those
// that do not answer within 200 ms (drainTimeout), so that the next call
// gets a live connection or dials one, instead of drawing dead ones one
// by one (failsafe's one probe a second would otherwise take as many
// seconds as the pool held idle connections to come back). One such drain
// runs at a time; a call on a healthy server sends nothing more.
//
// Pool and dial options that matter to a limiter, with redigo's defaults:
//   - DialContext (rather than Dial), with redis.DialContext: the dial
//     ends with the call's context. Pool.Dial is given no context, and
//     redis.Dial waits up to redis.DialConnectTimeout (30 s) on a server
//     that does not answer its SYN (a partition).
//   - redis.DialReadTimeout and redis.DialWriteTimeout (none): bound a call
//     whose context has no deadline (a net/http request's); without them
//     such a call on a server that stopped answering waits as long as the
//     server does. A call whose context has a deadline ends at it, and
//     redigo closes the connection. Bound the call anyway (failsafe, or
//     httplimit's Timeout), since the calls that wait hold connections.
//   - MaxIdle (0): the connections kept between calls; with 0 every call
//     dials. A connection whose call failed is closed, not kept, and the
//     idle ones are checked as above; TestOnBorrow (a PING before a call
//     takes a connection) is not needed for that, and costs a round trip.
//   - MaxActive (no limit) and Wait (false): at most MaxActive connections
//     at once; with Wait, a call waits for one (until its context ends)
//     instead of failing with redis.ErrPoolExhausted.
package redigostore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

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
	return scriptproto.New("redigo", &client{pool: pool}, append(own, opts...)...)
}

// drainTimeout bounds the PINGs of a drain: a live server answers a PING
// in well under a millisecond, and a dead connection fails at once.
const drainTimeout = 200 * time.Millisecond

// client is the scriptproto.Client of a redigo pool.
type client struct {
	pool *redis.Pool
	// draining is set while a call drains the pool (drain).
	draining atomic.Bool
}

func (k *client) Do(ctx context.Context, c scriptproto.Cmd, reply []int64) ([]int64, error) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer k.release(conn)
	v, err := redis.DoContext(conn, ctx, c.Name.String(), args(c)...)
	if err != nil {
		return nil, err
	}
	return scriptproto.DecodeAny(v, reply)
}

// DoMulti pipelines cmds on one connection.
func (k *client) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		fail(out, err)
		return
	}
	defer k.release(conn)
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

// release gives conn back to the pool, which closes it if it broke; if it
// broke otherwise than by a timeout, it drains the pool.
func (k *client) release(conn redis.Conn) {
	err := conn.Err()
	conn.Close()
	if err != nil && !timedOut(err) {
		k.drain()
	}
}

// timedOut reports whether err, a connection's error, is a timeout: the
// call's context ended, or a read or write deadline passed. A server
// that is slow or paused has not dropped the other connections.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.As(err, &ne) && ne.Timeout()
}

// drain takes the connections idle in the pool, sends each a PING, and
// returns those that answer within drainTimeout: the pool closes the
// others. Only one call drains at a time; the others go on. It takes as
// many connections as were idle when it began, fewer if other calls take
// some meanwhile, and never dials for one.
func (k *client) drain() {
	if !k.draining.CompareAndSwap(false, true) {
		return
	}
	defer k.draining.Store(false)
	n := k.pool.Stats().IdleCount
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	conns := make([]redis.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close() // back to the pool, or closed if it broke
		}
	}()
	// All PINGs are sent before any reply is read, so that the drain takes
	// one round trip, not one per connection. An error breaks its
	// connection, which the pool then closes.
	for len(conns) < n && k.pool.Stats().IdleCount > 0 {
		c, err := k.pool.GetContext(ctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
		if c.Send("PING") == nil {
			_ = c.Flush()
		}
	}
	for _, c := range conns {
		if c.Err() == nil {
			_, _ = redis.ReceiveContext(c, ctx)
		}
	}
}

// Load implements scriptproto.Loader: FUNCTION LOAD on the pool's server.
func (k *client) Load(ctx context.Context, code string) []error {
	conn, err := k.pool.GetContext(ctx)
	if err != nil {
		return []error{err}
	}
	defer k.release(conn)
	_, err = redis.DoContext(conn, ctx, "FUNCTION", "LOAD", code)
	return []error{err}
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
