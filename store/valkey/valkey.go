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
// EVAL (EVAL_RO) on NOSCRIPT. Against a server without CLIENT TRACKING set
// DisableCache; against miniredis also ForceSingleClient. valkey-go does
// not retry scripts that may write. Single node, cluster and sentinel work
// as the client supports them; keys in different slots are refused with an
// error, as valkey-go would panic on them in cluster mode.
package valkeystore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/slot"
)

// Runner is a core.ScriptRunner over a valkey-go client.
type Runner struct {
	c       valkey.Client
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

// New returns a Runner that runs scripts with c. It sends nothing.
func New(c valkey.Client, opts ...Option) *Runner {
	r := &Runner{c: c}
	for _, o := range opts {
		o(r)
	}
	return r
}

// RunScript runs s with EVALSHA (EVALSHA_RO when s is read-only), and with
// EVAL (EVAL_RO) when the server does not know the script. The reply must be
// an array of integers.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if r == nil || r.c == nil {
		return nil, fmt.Errorf("%w: valkey: Runner has no client", core.ErrStore)
	}
	if len(keys) > 1 && !slot.Same(keys) {
		return nil, fmt.Errorf("%w: valkey: script %q: keys %q are in different cluster slots", core.ErrStore, s.Name(), keys)
	}
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strconv.FormatInt(a, 10)
	}
	ro := s.ReadOnly() && !r.plainRO
	var cmd valkey.Completed
	if ro {
		cmd = r.c.B().EvalshaRo().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	} else {
		cmd = r.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
	}
	res := r.c.Do(ctx, cmd)
	if e, ok := valkey.IsValkeyErr(res.Error()); ok && e.IsNoScript() {
		if ro {
			cmd = r.c.B().EvalRo().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
		} else {
			cmd = r.c.B().Eval().Script(s.Lua()).Numkeys(int64(len(keys))).Key(keys...).Arg(argv...).Build()
		}
		res = r.c.Do(ctx, cmd)
	}
	arr, err := res.ToArray()
	if err != nil {
		if valkey.IsParseErr(err) || valkey.IsValkeyNil(err) {
			return nil, fmt.Errorf("%w: %w: valkey: script %q: %w", core.ErrStore, core.ErrUnexpectedReply, s.Name(), err)
		}
		return nil, fmt.Errorf("%w: valkey: script %q: %w", core.ErrStore, s.Name(), err)
	}
	out := reply
	for i := range arr {
		n, err := arr[i].ToInt64()
		if err != nil {
			return nil, fmt.Errorf("%w: %w: valkey: script %q reply element %d is not an integer", core.ErrStore, core.ErrUnexpectedReply, s.Name(), i)
		}
		out = append(out, n)
	}
	return out, nil
}
