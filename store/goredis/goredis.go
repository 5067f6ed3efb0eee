// Package goredisstore runs ratekit scripts through go-redis v9
// (github.com/redis/go-redis/v9). It lives in store/goredis and is named
// goredisstore so that it reads well beside the client, which is imported
// as redis and often aliased goredis:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	lim, err := tokenbucket.New(goredisstore.New(rdb), cfg)
//
// Any go-redis client that can run scripts works: *redis.Client,
// *redis.ClusterClient, *redis.Ring, the AutoPipeliner, or anything else
// implementing redis.Scripter. Each call is EVALSHA (EVALSHA_RO for
// read-only scripts), falling back to EVAL (EVAL_RO) when the server
// answers NOSCRIPT: after a restart, a failover or SCRIPT FLUSH, scripts
// load themselves again. A batch (AllowMany) is one pipeline (a key's
// requests past its first 64 wait for another). A call whose
// context has already ended sends nothing. The protocol is the one every
// ratekit Redis adapter shares.
//
// Pipelining: on a *redis.Client, *redis.ClusterClient or *redis.Ring, the
// calls many goroutines make at once share round trips. Up to four calls
// go as they come, each alone, on its caller's goroutine: a lone caller
// waits for nothing and pays nothing. A call that comes while four are in
// flight is queued, and the queue goes, as soon as one of them returns, as
// one go-redis pipeline (one write and one read per node; go-redis splits
// it by node), sent by one of the queued callers. Each call is still its
// own EVALSHA with its own reply, error and EVAL fallback, so decisions are
// those of calls sent one by one; what the client and the server save is
// a write, a read and a wake-up per call. A caller whose context ends while
// it is queued returns at once, with an error wrapping core.ErrStore and
// the context's error, and nothing is sent for it; once its pipeline is
// out it returns at once too, but its script may still run. A pipeline has
// no cancellation of its own (no caller leaving fails the others' calls),
// the latest deadline of its calls (none if one has none) and the values of
// its first call's context, which is what go-redis hooks (tracing) see.
// WithoutPipelining turns it off.
//
// Retries: go-redis retries a command after a network error (MaxRetries, 3 by
// default), so a script whose reply was lost may run twice. ratekit does not
// change the client it is given. A decision counted twice only ever denies
// more, never allows more than the limit; to run each decision at most once,
// build the client with MaxRetries: -1.
//
// A script's keys must share one cluster slot (ratekit's own scripts keep
// them under one hash tag); the Runner refuses keys in different slots on
// every topology, so that what works on one node works on a cluster.
//
// New with a nil client, or a typed nil such as (*redis.Client)(nil),
// returns a Runner that limiters refuse when they are built
// (core.ErrInvalidConfig).
package goredisstore

import (
	"context"
	"errors"
	"strings"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/internal/typednil"
)

// Runner is a core.ScriptRunner and core.BatchRunner over a go-redis
// client.
type Runner struct {
	p       scriptproto.Runner
	plainRO bool
	single  bool // one command per call, not pipelined (WithoutPipelining)
}

var (
	_ core.BatchRunner = (*Runner)(nil)
	_ core.KeyCopier   = (*Runner)(nil)
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

// WithoutPipelining sends every call alone, as go-redis sends any command,
// however many goroutines call at once (see the package doc for what
// pipelining does). Turn it off when a queued call must not wait for a
// call in flight to return: a queued call waits up to one round trip
// before it is sent, and on a ClusterClient or Ring a pipeline returns when
// its slowest node has answered, so one slow node delays the calls to the
// others that share its pipeline. Also when go-redis hooks must see each
// call under its own context (a pipeline carries its first call's), and
// when the client pipelines already (an AutoPipeliner, which New never
// pipelines again, nor any Scripter but the three clients).
func WithoutPipelining() Option {
	return func(r *Runner) { r.single = true }
}

// New returns a Runner that runs scripts with c. It sends nothing to Redis.
func New(c redis.Scripter, opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	k := client{s: c}
	k.p, _ = c.(processor)
	k.pipe, _ = c.(pipeliner)
	var sc scriptproto.Client = k
	if !r.single && pipelines(c) {
		sc = scriptproto.NewPipe(k, scriptproto.DefaultInFlight)
	}
	r.p = scriptproto.New("goredis", c, sc, r.plainRO)
	_, one := c.(*redis.Client) // a Ring, a ClusterClient or an AutoPipeliner may span nodes
	r.p.SetSingleNode(one)
	return r
}

// pipelines reports whether calls through c are pipelined by default:
// on the clients whose pipelines are one write per server, not on an
// AutoPipeliner (which pipelines already) or another Scripter.
func pipelines(c redis.Scripter) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient, *redis.Ring:
		return !typednil.Is(c)
	}
	return false
}

func (r *Runner) proto() *scriptproto.Runner {
	if r == nil {
		return nil
	}
	return &r.p
}

// RunScript runs s with EVALSHA (EVALSHA_RO when s is read-only), and with
// EVAL (EVAL_RO) when the server does not know the script. The reply must be
// an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return r.proto().RunScript(ctx, s, keys, args, reply)
}

// RunScripts runs calls in one pipeline (one round trip per node on a
// cluster or ring): EVALSHA for each, then, for the calls that met
// NOSCRIPT, one more pipeline of EVAL, which loads the script where it was
// missing. go-redis pipelines have no EVAL fallback of their own. A call
// on a key of an earlier call waits for the next pipeline, so that calls
// on one key run in the order given even when the earlier one must be
// loaded. A client without Pipeline runs the calls one by one.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	return r.proto().RunScripts(ctx, calls)
}

// SingleNode reports whether the client talks to one server that lets a
// script's keys span cluster slots (core.SingleNode): a *redis.Client (Sentinel's NewFailoverClient is one), not a ClusterClient, a Ring or an AutoPipeliner, which may span nodes. Limiters
// then decide a batch of keys in any slots with one script call. A server
// that refuses such a call with CROSSSLOT (a cluster behind one address)
// makes it false from then on; that batch is sent again slot by slot.
func (r *Runner) SingleNode() bool { return r.proto().SingleNode() }

// StoreName returns "goredis" (core.StoreNamer), for metrics and traces.
func (r *Runner) StoreName() string { return "goredis" }

// Check returns an error wrapping core.ErrInvalidConfig when r cannot run
// scripts: nil, a zero value, or built with a nil client. Limiters call it
// when they are built.
func (r *Runner) Check() error { return r.proto().Check() }

// CopiesKeysOf returns r (core.KeyCopier): every key is copied into the
// command, which the client may hold after a call times out, so limiters
// may lend r keys built in a reused buffer.
func (r *Runner) CopiesKeysOf() core.ScriptRunner { return r }

// client is the scriptproto.Client of a go-redis client.
type client struct {
	s    redis.Scripter
	p    processor // s, when it can run a prebuilt command
	pipe pipeliner // s, when it can pipeline
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
	_ = k.p.Process(ctx, cmd) // the error is also the command's
	return result(cmd, reply)
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
		_ = pipe.Process(ctx, queued[i]) // queues it
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, cmd := range queued {
		out[i].Reply, out[i].Err = result(cmd, out[i].Reply)
	}
}

// script runs c through the redis.Scripter methods, for a Scripter that
// cannot run a prebuilt command.
func (k client) script(ctx context.Context, c scriptproto.Cmd) *redis.Cmd {
	keys := make([]string, len(c.Keys))
	for i, key := range c.Keys {
		keys[i] = strings.Clone(key) // see CopiesKeysOf
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
