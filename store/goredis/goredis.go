// Package goredisstore runs ratekit scripts through go-redis v9
// (github.com/redis/go-redis/v9). It lives in store/goredis and is named
// goredisstore so that it reads well beside the client, which is imported
// as redis and often aliased goredis:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
//	store, err := goredisstore.New(rdb)
//	lim, err := tokenbucket.New(store, cfg)
//
// The go-redis clients that work: *redis.Client (Sentinel's
// NewFailoverClient returns one), *redis.ClusterClient (so does
// NewFailoverClusterClient), *redis.Ring, the *redis.AutoPipeliner, and a
// redis.UniversalClient, which is one of the first three. New refuses,
// with an error wrapping core.ErrInvalidConfig, a nil one of each, and
// the go-redis types a limiter cannot use: a *redis.Conn or *redis.Tx
// (one connection, which go-redis says must not be shared between
// goroutines, while a limiter is; a Tx also ends with its Watch
// function) and a pipeline (*redis.Pipeline or any redis.Pipeliner: its
// commands wait for an Exec that the store never calls). Pass the client
// they came from. Any other redis.Scripter, a type of your own, is used
// as it is; New cannot tell a nil pointer of it, nor a go-redis client
// not built by go-redis (a zero redis.Client{}), from a working one.
//
// The store is a *scriptproto.Runner: the protocol every ratekit Redis
// adapter shares (EVALSHA with its EVAL fallback, batches, slot and
// context checks), with its options (scriptproto.WithoutReadOnlyCommands
// for Redis before 7.0 and miniredis). A *redis.Client is one node, so a
// batch's keys may span slots there; the other clients may span nodes. A
// batch (AllowMany) is one go-redis pipeline, which go-redis splits by
// node.
//
// On a *redis.Client, *redis.ClusterClient or *redis.Ring the store
// pipelines concurrent calls (scriptproto.Pipelining says how, and
// Pipelining(false) turns it off): the calls many goroutines make at once
// share round trips, each still its own EVALSHA with its own reply.
//
// Retries: on a ClusterClient, and on every client but a *redis.Client or
// a *redis.Ring (an AutoPipeliner may be a cluster's), the store marks
// each command as one go-redis must not run twice (redis.Cmder's NoRetry),
// so each decision runs at most once whatever the options. A ClusterClient
// has no option that turns its retries off: it sends a command again after
// a network error or an answer such as TRYAGAIN or CLUSTERDOWN, up to
// MaxRedirects times, and a node's whole pipeline when the pipeline's
// first command gets one of those, calls that already ran included.
// Marked, a command still follows MOVED and ASK, which a node answers
// without running anything, and returns any other error as the call's, as
// rueidis does: a policy whose keys a moving slot has split fails with an
// error wrapping core.ErrStore and the server's TRYAGAIN (nothing of it
// ran) until the move has taken them all. A go-redis hook sees these
// commands as a type of their own, not *redis.Cmd. A Scripter without
// go-redis' Process method gets its scripts through its Eval methods,
// unmarked.
//
// Client options (redis.Options, and their ClusterOptions and RingOptions
// kin) that matter to a limiter, with go-redis v9's defaults:
//   - MaxRetries (3): a *redis.Client or *redis.Ring sends a command again
//     after a network error, so a script whose reply was lost may run
//     twice; a decision counted twice only ever denies more, never allows
//     more than the limit. MaxRetries: -1 runs each decision at most once.
//   - MaxRedirects (3), on a ClusterClient: leave it at 3 or above; -1
//     turns redirects off, and every call on a moving slot fails.
//   - ContextTimeoutEnabled (false): without it go-redis does not end a
//     call at its context's deadline but waits up to ReadTimeout and
//     WriteTimeout (5 s each) on a server that stopped answering (a paused
//     process, a partition). With it a call ends at its deadline; a
//     context with no deadline (a net/http request's) still waits the
//     timeouts out, so bound the call (failsafe, or httplimit's Timeout).
//   - DialerRetries (5) and DialerRetryTimeout (100 ms): how many times a
//     call that needs a new connection dials, and the wait between two,
//     before it fails. With the defaults a call on a server that is down
//     (killed, restarting) fails after 0.4 s or more, not at once;
//     DialerRetries: 1 dials once, so that it fails at the first refused
//     dial and the failure mode applies at once. A bound (failsafe, or
//     httplimit's Timeout) ends the wait either way. DialTimeout (5 s)
//     bounds each dial.
//   - PoolSize (10 per GOMAXPROCS) and PoolTimeout (ReadTimeout + 1 s): the
//     connections open at once, and how long a call waits for one.
//
// After the server restarts, go-redis' pool (v9.22 and v9.23, in its
// internal/pool) checks an idle connection before a call takes it and
// drops it when the server closed it, and dials a new one. It counts the
// dials that failed (each after DialerRetries attempts); once PoolSize have
// failed, over the pool's life and not only in a row, it stops dialing: a
// call that needs a new connection fails at once with the last dial error
// ("connection refused"), and a goroutine of the pool dials once a second
// (a fixed interval: no option sets it) until one connects, when the pool
// dials again. So calls fail for up to a second after the server answers
// again. No option shortens that second: PoolSize only sets how many
// failed dials it takes; DialerRetries, DialerRetryTimeout and
// DialerRetryBackoff how long a call dials before it fails; MaxRetries,
// MinRetryBackoff and MaxRetryBackoff let a call try again within its own
// time (its context's deadline ends the tries).
//
// On a *redis.Client the store shortens it with a dial on demand: a call
// that meets a dial error (which go-redis returns before it sends
// anything: with MaxRetries: -1 the decision never ran; with retries an
// earlier try may have, as MaxRetries says) dials the server itself, with
// the client's Dialer, bounded by the call's context and DialTimeout; at
// most one such dial is under way, and one starts at most every
// DialerRetryTimeout (100 ms by default); the calls meanwhile return their
// error. When that dial connects, the call runs on a spare client the
// store makes with the client's Options (less a client-side cache,
// maintenance notifications and MinIdleConns), and so does every call that
// meets a dial error after it, until the client's pool gives a connection
// again, the spare meets a dial error, or 2 s have passed: then the spare
// is closed as soon as no call uses it. So decisions resume within about a
// DialerRetryTimeout of the server answering. Hooks added to the client
// (AddHook) do not see the calls on the spare, and the server sees the
// spare's connections too, for that second. On a ClusterClient, a Ring or
// an AutoPipeliner each node's pool does the same, and the store does not
// shorten it: bound every call (failsafe, or httplimit's Timeout).
package goredisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// New returns the store that runs scripts with c: one node on a
// *redis.Client, pipelined on a *redis.Client, *redis.ClusterClient or
// *redis.Ring (scriptproto.SingleNode and Pipelining; opts come after
// them). It sends nothing. A nil c, a nil pointer of a go-redis client,
// and a go-redis type a limiter cannot use (a *redis.Conn, *redis.Tx or
// pipeline: see the package doc) are refused with an error wrapping
// core.ErrInvalidConfig.
func New(c redis.Scripter, opts ...scriptproto.Option) (*scriptproto.Runner, error) {
	if why := refused(c); why != "" {
		return nil, fmt.Errorf("%w: goredis: %s", core.ErrInvalidConfig, why)
	}
	k := client{s: c, once: once(c)}
	k.p, _ = c.(processor)
	k.pipe, _ = c.(pipeliner)
	if rc, ok := c.(*redis.Client); ok {
		k.r = &redial{c: rc}
	}
	_, one := c.(*redis.Client) // a Ring, a ClusterClient or an AutoPipeliner may span nodes
	own := []scriptproto.Option{scriptproto.SingleNode(one), scriptproto.Pipelining(pipelines(c))}
	if loads(c) {
		return scriptproto.New("goredis", loader{k}, append(own, opts...)...)
	}
	return scriptproto.New("goredis", k, append(own, opts...)...)
}

// refused says why New refuses c, or returns "": a switch over go-redis'
// types (every one that is a redis.Scripter), so that no store New
// returns panics inside go-redis at its first call. A nil pointer of each
// is refused; so are a Conn and a Tx (one connection each, which go-redis
// says must not be shared between goroutines: a limiter is shared, and a
// Tx ends with its Watch function too), and a pipeline (its commands wait
// for an Exec the store never calls). Any other Scripter, a type of the
// caller's, is used as it is.
func refused(c redis.Scripter) string {
	var isNil bool
	switch c := c.(type) {
	case nil:
		return "a nil client"
	case *redis.Client:
		isNil = c == nil
	case *redis.ClusterClient:
		isNil = c == nil
	case *redis.Ring:
		isNil = c == nil
	case *redis.AutoPipeliner:
		isNil = c == nil
	case *redis.Conn:
		if c == nil {
			return "a nil *redis.Conn"
		}
		return "a *redis.Conn must not be shared between goroutines (go-redis says so), and a limiter is: pass the client it came from"
	case *redis.Tx:
		if c == nil {
			return "a nil *redis.Tx"
		}
		return "a *redis.Tx must not be shared between goroutines (go-redis says so), and a limiter is: pass the client it came from"
	case *redis.Pipeline:
		if c == nil {
			return "a nil *redis.Pipeline"
		}
		return "a *redis.Pipeline only queues commands until its Exec, which the store never calls: pass the client it came from"
	case redis.Pipeliner:
		return fmt.Sprintf("a %T is a redis.Pipeliner, which only queues commands until its Exec, which the store never calls: pass the client it came from", c)
	}
	if isNil {
		return fmt.Sprintf("a nil %T", c)
	}
	return ""
}

// once reports whether the store marks its commands through c as
// commands go-redis must not run twice (onceCmd): on every client but the
// two whose retries MaxRetries: -1 turns off (see the package doc).
func once(c redis.Scripter) bool {
	switch c.(type) {
	case *redis.Client, *redis.Ring:
		return false
	}
	return true
}

// pipelines reports whether calls through c are pipelined by default:
// on the clients whose pipelines are one write per server, not on an
// AutoPipeliner (which pipelines already) or another Scripter.
func pipelines(c redis.Scripter) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient, *redis.Ring:
		return true
	}
	return false
}

// client is the scriptproto.Client of a go-redis client.
// loads reports whether the store can load function libraries on every
// primary of c (scriptproto.Loader): on the clients whose primaries it
// can reach one by one. On any other (an AutoPipeliner, a Scripter of
// the caller's own) every script runs as EVALSHA.
func loads(c redis.Scripter) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient, *redis.Ring:
		return true
	}
	return false
}

// loader is the client of a store that loads function libraries
// (scriptproto.Loader).
type loader struct{ client }

// Load implements scriptproto.Loader: FUNCTION LOAD on the server, on each
// primary of a cluster, on each shard of a ring.
func (k loader) Load(ctx context.Context, code string) []error {
	var (
		mu   sync.Mutex
		errs []error
	)
	each := func(ctx context.Context, c *redis.Client) error {
		err := c.FunctionLoad(ctx, code).Err()
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		return nil
	}
	var err error
	switch c := k.s.(type) {
	case *redis.Client:
		return []error{c.FunctionLoad(ctx, code).Err()}
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

type client struct {
	s    redis.Scripter
	p    processor // s, when it can run a prebuilt command
	pipe pipeliner // s, when it can pipeline
	once bool      // send every command as a onceCmd
	r    *redial   // on a *redis.Client: what it does after a dial error
}

// processor runs a prebuilt command: every go-redis client has it
// (Client, ClusterClient, Ring, AutoPipeliner, Pipeline, Conn).
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// pipeliner is what a go-redis client needs for batches; *redis.Client,
// *redis.ClusterClient, *redis.Ring and the AutoPipeliner all have it.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

func (k client) Do(ctx context.Context, c scriptproto.Cmd, reply []int64) ([]int64, error) {
	if k.p == nil {
		return result(k.script(ctx, c), reply)
	}
	cmd := newCmd(ctx, c)
	_ = k.p.Process(ctx, k.cmder(cmd)) // the error is also the command's
	if k.r != nil {
		cmd = k.redial(ctx, cmd, c)
	}
	return result(cmd, reply)
}

// redial returns cmd, sent to k's *redis.Client, or, when it met a dial
// error and the server answers a dial of the store's, the same command sent
// again to the spare (see redial). A command that met no dial error
// retires the spare.
func (k client) redial(ctx context.Context, cmd *redis.Cmd, c scriptproto.Cmd) *redis.Cmd {
	if !isDialError(cmd.Err()) {
		if k.r.active.Load() {
			k.r.retire(nil)
		}
		return cmd
	}
	s := k.r.get(ctx)
	if s == nil {
		return cmd
	}
	again := newCmd(ctx, c)
	_ = s.c.Process(ctx, again)
	k.r.put(s, isDialError(again.Err()))
	return again
}

// DoMulti sends cmds in one pipeline; go-redis splits it by node.
func (k client) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	if k.pipe == nil {
		for i, c := range cmds {
			out[i].Reply, out[i].Err = k.Do(ctx, c, out[i].Reply)
		}
		return
	}
	pipe := k.pipe.Pipeline()
	queued := make([]*redis.Cmd, len(cmds))
	for i, c := range cmds {
		queued[i] = newCmd(ctx, c)
		_ = pipe.Process(ctx, k.cmder(queued[i])) // queues it
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	if k.r != nil {
		k.redialMulti(ctx, cmds, queued)
	}
	for i, cmd := range queued {
		out[i].Reply, out[i].Err = result(cmd, out[i].Reply)
	}
}

// redialMulti is redial for a pipeline: the commands of queued (cmds,
// sent to k's *redis.Client) that met a dial error go again in one
// pipeline to the spare, and take their places in queued.
func (k client) redialMulti(ctx context.Context, cmds []scriptproto.Cmd, queued []*redis.Cmd) {
	var failed []int
	for i, cmd := range queued {
		if isDialError(cmd.Err()) {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		if k.r.active.Load() {
			k.r.retire(nil)
		}
		return
	}
	s := k.r.get(ctx)
	if s == nil {
		return
	}
	pipe := s.c.Pipeline()
	for _, i := range failed {
		queued[i] = newCmd(ctx, cmds[i])
		_ = pipe.Process(ctx, queued[i])
	}
	_, _ = pipe.Exec(ctx)
	dialErr := false
	for _, i := range failed {
		dialErr = dialErr || isDialError(queued[i].Err())
	}
	k.r.put(s, dialErr)
}

// cmder returns cmd as k sends it: as a onceCmd when k.once.
func (k client) cmder(cmd *redis.Cmd) redis.Cmder {
	if k.once {
		return onceCmd{cmd}
	}
	return cmd
}

// onceCmd is a command go-redis never sends again once it may have run
// (redis.Cmder's NoRetry): it still follows MOVED and ASK, but any other
// error is the command's, and a pipeline that holds it re-sends none of
// its commands. A pointer in a struct: it goes into a redis.Cmder without
// an allocation.
type onceCmd struct{ *redis.Cmd }

// NoRetry reports true: see onceCmd.
func (onceCmd) NoRetry() bool { return true }

// script runs c through the redis.Scripter methods, for a Scripter that
// cannot run a prebuilt command.
func (k client) script(ctx context.Context, c scriptproto.Cmd) *redis.Cmd {
	keys := make([]string, len(c.Keys))
	for i, key := range c.Keys {
		keys[i] = strings.Clone(key) // go-redis may hold the command after the call
	}
	args := make([]any, len(c.Args))
	for i, a := range c.Args {
		args[i] = a
	}
	switch c.Name {
	case scriptproto.EvalSHARO:
		return k.s.EvalShaRO(ctx, c.Payload(), keys, args...)
	case scriptproto.Eval:
		return k.s.Eval(ctx, c.Payload(), keys, args...)
	case scriptproto.EvalRO:
		return k.s.EvalRO(ctx, c.Payload(), keys, args...)
	}
	return k.s.EvalSha(ctx, c.Payload(), keys, args...)
}

// newCmd returns c as a go-redis command, as go-redis' own EvalSha builds
// it: the first key, if any, is argument 3 (its slot on a cluster).
func newCmd(ctx context.Context, c scriptproto.Cmd) *redis.Cmd {
	cmd := redis.NewCmd(ctx, command(c.Name.Lower(), c.Payload(), c.Keys, c.Args)...)
	if len(c.Keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
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

// command returns name payload numkeys keys... args... as go-redis command
// arguments, keys copied. numkeys stays a plain int, as go-redis' EvalSha
// sends it. A command too large for a frame costs more allocations.
func command(name, payload string, keys []string, args []int64) []any {
	if len(keys) > maxKeys || len(args) > maxArgs {
		a := make([]any, 0, 3+len(keys)+len(args))
		a = append(a, name, payload, len(keys))
		for _, k := range keys {
			a = append(a, strings.Clone(k))
		}
		for _, v := range args {
			a = append(a, v)
		}
		return a
	}
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

var errNilReply = errors.New("the script replied nil")

// result reads a script command's outcome: go-redis' nil reply is a reply
// of the wrong shape, not a failure of the server.
func result(cmd *redis.Cmd, reply []int64) ([]int64, error) {
	v, err := cmd.Result()
	if err == redis.Nil {
		return nil, scriptproto.BadReply(errNilReply)
	}
	if err != nil {
		return nil, err
	}
	return scriptproto.DecodeAny(v, reply)
}
