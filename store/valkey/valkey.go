// Package valkeystore runs ratekit scripts through valkey-go
// (github.com/valkey-io/valkey-go), the Valkey project's client (a fork of
// rueidis, with the same auto pipelining). It lives in store/valkey and is
// named valkeystore so that it never clashes with the client's package,
// valkey:
//
//	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}})
//	lim, err := tokenbucket.New(valkeystore.New(client), cfg)
//
// It speaks the protocol every ratekit Redis adapter shares, exactly as
// store/rueidis does: EVALSHA (EVALSHA_RO for read-only scripts), falling
// back to EVAL (EVAL_RO) on NOSCRIPT; RunScripts (a limiter's AllowMany)
// sends a batch with one DoMulti (a call on a key of an earlier call waits
// for another); nothing is sent once a call's
// context has ended; keys in different slots are refused with an error, as
// valkey-go would panic on them in cluster mode. Against a server without
// CLIENT TRACKING set DisableCache; against miniredis also
// ForceSingleClient. valkey-go does not retry scripts that may write.
// Single node, cluster and sentinel work as the client supports them.
//
// New with a nil client returns a Runner that limiters refuse when they
// are built (core.ErrInvalidConfig).
package valkeystore

import (
	"context"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/internal/typednil"
)

// Runner is a core.ScriptRunner and core.BatchRunner over a valkey-go
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

// New returns a Runner that runs scripts with c. It sends nothing.
func New(c valkey.Client, opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	var api scriptproto.Client
	if !typednil.Is(c) {
		api = scriptproto.RueidisAPI[valkey.Completed, valkey.ValkeyResult, valkey.ValkeyMessage, *valkey.ValkeyMessage]{
			Send:      c.Do,
			SendMulti: c.DoMulti,
			Build: func(n scriptproto.Name, payload, numkeys string, keys, argv []string) valkey.Completed {
				return build(c.B(), n, payload, numkeys, keys, argv)
			},
			ToArray:    valkey.ValkeyResult.ToArray,
			IsBadReply: func(err error) bool { return valkey.IsParseErr(err) || valkey.IsValkeyNil(err) },
		}
	}
	r.p = scriptproto.New("valkey", c, api, r.plainRO)
	if api != nil {
		r.p.SetSingleNode(c.Mode() != valkey.ClientModeCluster)
	}
	return r
}

// build returns the script command; EVALSHA_RO and EVAL_RO are marked
// read-only, which valkey-go may retry.
func build(b valkey.Builder, n scriptproto.Name, payload, numkeys string, keys, argv []string) valkey.Completed {
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

// RunScript runs s as EVALSHA or EVALSHA_RO, then EVAL or EVAL_RO on
// NOSCRIPT, and appends the reply's integers to reply.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return r.proto().RunScript(ctx, s, keys, args, reply)
}

// RunScripts runs calls with one DoMulti (one round trip per node), then
// one more for the calls that met NOSCRIPT. A call on a key of an earlier
// call waits for the next DoMulti, so that calls on one key run in the
// order given even when the earlier one must be loaded.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	return r.proto().RunScripts(ctx, calls)
}

// SingleNode reports whether the client talks to one server that lets a
// script's keys span cluster slots (core.SingleNode): a client that is not in cluster mode (standalone or sentinel). Limiters
// then decide a batch of keys in any slots with one script call. A server
// that refuses such a call with CROSSSLOT (a cluster behind one address)
// makes it false from then on; that batch is sent again slot by slot.
func (r *Runner) SingleNode() bool { return r.proto().SingleNode() }

// StoreName returns "valkey" (core.StoreNamer), for metrics and traces.
func (r *Runner) StoreName() string { return "valkey" }

// Check returns an error wrapping core.ErrInvalidConfig when r cannot run
// scripts: nil, a zero value, or built with a nil client.
func (r *Runner) Check() error { return r.proto().Check() }

// CopiesKeysOf returns r (core.KeyCopier): keys are copied before they
// reach valkey-go, so limiters may lend r keys in a reused buffer.
func (r *Runner) CopiesKeysOf() core.ScriptRunner { return r }
