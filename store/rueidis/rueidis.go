// Package rueidisstore runs ratekit scripts through rueidis
// (github.com/redis/rueidis). It lives in store/rueidis and is named
// rueidisstore so that callers need no alias beside the client package:
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	lim, err := tokenbucket.New(rueidisstore.New(client), cfg)
//
// rueidis pipelines concurrent commands on shared connections by itself
// (auto pipelining), so many goroutines deciding at once share network
// writes. Each call is EVALSHA (EVALSHA_RO for read-only scripts), falling
// back to EVAL (EVAL_RO) when the server answers NOSCRIPT; a batch
// (AllowMany) is one DoMulti (a key's requests past its first 64 wait for
// another). A call whose context has already ended sends
// nothing. The protocol is the one every ratekit Redis adapter shares.
//
// Client options that matter:
//   - DisableCache: true when the server lacks CLIENT TRACKING (Redis before
//     6, many proxies, miniredis). ratekit never uses client-side caching.
//   - ForceSingleClient: true to point a client at miniredis in tests:
//     miniredis answers CLUSTER SHARDS, and rueidis would otherwise treat it
//     as a cluster.
//
// Retries: rueidis does not retry EVALSHA or EVAL, which may write, so every
// decision runs at most once; a lost reply is an error. It may retry the
// read-only variants, which cannot change state.
//
// In cluster mode rueidis panics when one command's keys fall in different
// slots. ratekit's own scripts keep their keys in one slot; the Runner
// refuses a script whose keys span slots with an error, on every topology.
//
// New with a nil client returns a Runner that limiters refuse when they
// are built (core.ErrInvalidConfig).
package rueidisstore

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/internal/typednil"
)

// Runner is a core.ScriptRunner and core.BatchRunner over a rueidis
// client.
type Runner struct {
	p       scriptproto.Runner
	plainRO bool
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

// New returns a Runner that runs scripts with c. It sends nothing to Redis.
func New(c rueidis.Client, opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	var api scriptproto.Client
	if !typednil.Is(c) {
		api = scriptproto.RueidisAPI[rueidis.Completed, rueidis.RedisResult, rueidis.RedisMessage, *rueidis.RedisMessage]{
			Send:      c.Do,
			SendMulti: c.DoMulti,
			Build: func(n scriptproto.Name, payload, numkeys string, keys, argv []string) rueidis.Completed {
				return build(c.B(), n, payload, numkeys, keys, argv)
			},
			ToArray:    rueidis.RedisResult.ToArray,
			IsBadReply: func(err error) bool { return rueidis.IsParseErr(err) || rueidis.IsRedisNil(err) },
		}
	}
	r.p = scriptproto.New("rueidis", c, api, r.plainRO)
	if api != nil {
		r.p.SetSingleNode(c.Mode() != rueidis.ClientModeCluster)
	}
	return r
}

// build returns the script command, marked read-only for EVALSHA_RO and
// EVAL_RO so that rueidis may retry it.
func build(b rueidis.Builder, n scriptproto.Name, payload, numkeys string, keys, argv []string) rueidis.Completed {
	a := b.Arbitrary(n.String(), payload, numkeys).Keys(keys...).Args(argv...)
	if n.ReadOnly() {
		return a.ReadOnly()
	}
	return a.Build()
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

// RunScripts runs calls with one DoMulti of EVALSHA commands (one round
// trip per node on a cluster), then one DoMulti of EVAL for the calls that
// met NOSCRIPT, which loads the script where it was missing. A call on a
// key of an earlier call waits for the next DoMulti, so that calls on one
// key run in the order given even when the earlier one must be loaded.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	return r.proto().RunScripts(ctx, calls)
}

// SingleNode reports whether the client talks to one server that lets a
// script's keys span cluster slots (core.SingleNode): a client that is not in cluster mode (standalone or sentinel). Limiters
// then decide a batch of keys in any slots with one script call. A server
// that refuses such a call with CROSSSLOT (a cluster behind one address)
// makes it false from then on; that batch is sent again slot by slot.
func (r *Runner) SingleNode() bool { return r.proto().SingleNode() }

// StoreName returns "rueidis" (core.StoreNamer), for metrics and traces.
func (r *Runner) StoreName() string { return "rueidis" }

// Check reports a Runner that cannot run scripts (nil, a zero value, or
// built with a nil client) with an error wrapping core.ErrInvalidConfig.
// Limiters call it when they are built.
func (r *Runner) Check() error { return r.proto().Check() }

// CopiesKeysOf returns r: every key is copied before it goes to the
// client, which may hold it after a call times out, so limiters may lend
// r keys built in a reused buffer (core.KeyCopier).
func (r *Runner) CopiesKeysOf() core.ScriptRunner { return r }
