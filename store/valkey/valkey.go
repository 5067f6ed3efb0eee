// Package valkeystore runs ratekit scripts through valkey-go
// (github.com/valkey-io/valkey-go), the Valkey project's client (a fork of
// rueidis, with the same auto pipelining). It lives in store/valkey and is
// named valkeystore so that it never clashes with the client's package,
// valkey:
//
//	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}})
//	lim, err := tokenbucket.New(valkeystore.New(client), cfg)
//
// Each call is EVALSHA (EVALSHA_RO for read-only scripts), falling back to
// EVAL (EVAL_RO) on NOSCRIPT; RunScripts (a limiter's AllowMany) sends a
// whole batch with one DoMulti. Against a server without CLIENT TRACKING set
// DisableCache; against miniredis also ForceSingleClient. valkey-go does
// not retry scripts that may write. Single node, cluster and sentinel work
// as the client supports them; keys in different slots are refused with an
// error, as valkey-go would panic on them in cluster mode.
package valkeystore

import (
	"context"
	"fmt"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/cmdargs"
	"github.com/ratekit/ratekit/internal/slot"
)

// Runner is a core.ScriptRunner over a valkey-go client.
type Runner struct {
	c       valkey.Client
	plainRO bool
}

var (
	_ core.ScriptRunner = (*Runner)(nil)
	_ core.BatchRunner  = (*Runner)(nil)
)

// Option configures a Runner.
type Option func(*Runner)

// WithoutReadOnlyCommands runs read-only scripts with EVALSHA and EVAL,
// for servers older than Redis 7.0 and for miniredis.
func WithoutReadOnlyCommands() Option {
	return func(r *Runner) { r.plainRO = true }
}

// New returns a Runner that runs scripts with c. It sends nothing.
func New(c valkey.Client, opts ...Option) *Runner {
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
		return nil, errNoClient
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, crossSlot(s, keys)
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
			out[i].Err = errNoClient
		}
		return out
	}
	cmds := make(valkey.Commands, 0, len(calls))
	index := make([]int, 0, len(calls)) // cmds[j] runs calls[index[j]]
	keys, args := cmdargs.Batch(calls)
	for i, c := range calls {
		if len(c.Keys) > 1 && !slot.Same(c.Keys) {
			out[i].Err = crossSlot(c.Script, c.Keys)
			continue
		}
		cmds = append(cmds, r.evalSHA(c.Script, keys[i], args[i]))
		index = append(index, i)
	}
	if len(cmds) == 0 {
		return out
	}
	var retry valkey.Commands
	var retryIndex []int
	for j, res := range r.c.DoMulti(ctx, cmds...) {
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

var errNoClient = fmt.Errorf("%w: valkey: Runner has no client", core.ErrStore)

func crossSlot(s *core.Script, keys []string) error {
	return fmt.Errorf("%w: valkey: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
}

func isNoScript(err error) bool {
	e, ok := valkey.IsValkeyErr(err)
	return ok && e.IsNoScript()
}

// decode checks a script command's outcome: an array of integers.
func decode(s *core.Script, res valkey.ValkeyResult, out []int64) ([]int64, error) {
	arr, err := res.ToArray()
	if err != nil {
		if valkey.IsParseErr(err) || valkey.IsValkeyNil(err) {
			return nil, fmt.Errorf("%w: %w: valkey: script %q: %w", core.ErrStore, core.ErrUnexpectedReply, s.Name(), err)
		}
		return nil, fmt.Errorf("%w: valkey: script %q: %w", core.ErrStore, s.Name(), err)
	}
	for i := range arr {
		n, err := arr[i].ToInt64()
		if err != nil {
			return nil, fmt.Errorf("%w: %w: valkey: script %q reply element %d is not an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i)
		}
		out = append(out, n)
	}
	return out, nil
}

func (r *Runner) evalSHA(s *core.Script, keys, argv []string) valkey.Completed {
	if s.ReadOnly() && !r.plainRO {
		return r.c.B().EvalshaRo().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	return r.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
}

func (r *Runner) eval(s *core.Script, keys, argv []string) valkey.Completed {
	if s.ReadOnly() && !r.plainRO {
		return r.c.B().EvalRo().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	return r.c.B().Eval().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
}
