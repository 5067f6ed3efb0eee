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
// back to EVAL (EVAL_RO) when the server answers NOSCRIPT.
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
// slots. ratekit's own scripts keep their keys in one slot; RunScript checks
// the slots of scripts with several keys and returns an error instead.
package rueidisstore

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/cmdargs"
	"github.com/ratekit/ratekit/internal/slot"
)

// Runner is a core.ScriptRunner over a rueidis client.
type Runner struct {
	c       rueidis.Client
	plainRO bool
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
func New(c rueidis.Client, opts ...Option) *Runner {
	r := &Runner{c: c}
	for _, o := range opts {
		o(r)
	}
	return r
}

// CopiesKeys reports true: every key is copied before it goes to the
// client, which may hold it after a call times out. ratekit's limiters use
// this to lend a key built in a reused buffer.
func (r *Runner) CopiesKeys() bool { return true }

// RunScript runs s with EVALSHA (EVALSHA_RO when s is read-only), and with
// EVAL (EVAL_RO) when the server does not know the script. The reply must be
// an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if r == nil || r.c == nil {
		return nil, fmt.Errorf("%w: rueidis: Runner has no client", core.ErrStore)
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, fmt.Errorf("%w: rueidis: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
	}
	k, a := cmdargs.Call(keys, args)
	res := r.c.Do(ctx, r.evalSHA(s, k, a))
	if isNoScript(res.Error()) {
		res = r.c.Do(ctx, r.eval(s, k, a))
	}
	return decode(s, res, reply)
}

// RunScripts runs calls with one DoMulti of EVALSHA commands (one round
// trip per node on a cluster), then one DoMulti of EVAL for the calls that
// met NOSCRIPT, which loads the script where it was missing.
//
// If another client loads a missing script while the first DoMulti runs, a
// later call on a key can succeed before an earlier one that met NOSCRIPT
// is retried: the two then apply in the other order. Every decision is
// still atomic and within the limit.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	if r == nil || r.c == nil {
		for i := range out {
			out[i].Err = fmt.Errorf("%w: rueidis: Runner has no client", core.ErrStore)
		}
		return out
	}
	cmds := make(rueidis.Commands, 0, len(calls))
	index := make([]int, 0, len(calls))
	keys, args := cmdargs.Batch(calls)
	for i, c := range calls {
		if len(c.Keys) > 1 && !slot.Same(c.Keys) {
			out[i].Err = fmt.Errorf("%w: rueidis: script %q: keys %q are in different cluster slots", core.ErrStore, c.Script.Name(), c.Keys)
			continue
		}
		cmds = append(cmds, r.evalSHA(c.Script, keys[i], args[i]))
		index = append(index, i)
	}
	results := r.c.DoMulti(ctx, cmds...)
	var retry rueidis.Commands
	var retryIndex []int
	for j, res := range results {
		i := index[j]
		if isNoScript(res.Error()) {
			retry = append(retry, r.eval(calls[i].Script, keys[i], args[i]))
			retryIndex = append(retryIndex, i)
			continue
		}
		out[i].Reply, out[i].Err = decode(calls[i].Script, res, nil)
	}
	if len(retry) > 0 {
		for j, res := range r.c.DoMulti(ctx, retry...) {
			i := retryIndex[j]
			out[i].Reply, out[i].Err = decode(calls[i].Script, res, nil)
		}
	}
	return out
}

func isNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}

// decode checks a script command's outcome: an array of integers.
func decode(s *core.Script, res rueidis.RedisResult, out []int64) ([]int64, error) {
	arr, err := res.ToArray()
	if err != nil {
		if rueidis.IsParseErr(err) || rueidis.IsRedisNil(err) {
			return nil, fmt.Errorf("%w: %w: rueidis: script %q: %w", core.ErrStore, core.ErrUnexpectedReply, s.Name(), err)
		}
		return nil, fmt.Errorf("%w: rueidis: script %q: %w", core.ErrStore, s.Name(), err)
	}
	for i := range arr {
		n, err := arr[i].ToInt64()
		if err != nil {
			return nil, fmt.Errorf("%w: %w: rueidis: script %q reply element %d is not an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i)
		}
		out = append(out, n)
	}
	return out, nil
}

func (r *Runner) evalSHA(s *core.Script, keys, argv []string) rueidis.Completed {
	if s.ReadOnly() && !r.plainRO {
		return r.c.B().EvalshaRo().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	return r.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
}

func (r *Runner) eval(s *core.Script, keys, argv []string) rueidis.Completed {
	if s.ReadOnly() && !r.plainRO {
		return r.c.B().EvalRo().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	return r.c.B().Eval().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
}
