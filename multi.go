package ratekit

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// Multi decides one request against several limiters at once: it is
// allowed only if every limiter allows it, and then every limiter counts
// it; when any limiter denies, none counts anything. The decision is one
// script on the store, so no other request sees a half-counted state.
//
// The limiters must share one store, and either all have a Clock or none
// has (the decision is made at the first limiter's time); each needs a
// Prefix of its own. A user key lives in one cluster slot under every
// prefix, so a Multi works on Redis Cluster as on one node.
type Multi struct {
	engines []*engine.Engine
	script  *core.Script
	peek    *core.Script
	limit   int64 // the largest cost every limiter accepts
}

// NewMulti returns a Multi over limiters, or an error wrapping
// core.ErrInvalidConfig.
func NewMulti(limiters ...*Limiter) (*Multi, error) {
	if len(limiters) == 0 {
		return nil, fmt.Errorf("%w: ratekit.NewMulti: no limiters", core.ErrInvalidConfig)
	}
	m := &Multi{limit: params.MaxCount}
	specs := make([]*engine.Spec, len(limiters))
	prefixes := map[string]bool{}
	for i, l := range limiters {
		if l == nil || l.e == nil {
			return nil, fmt.Errorf("%w: ratekit.NewMulti: limiter %d is nil", core.ErrInvalidConfig, i)
		}
		e := l.e
		if i > 0 && (!same(e.Runner(), m.engines[0].Runner()) || (e.Clock() == nil) != (m.engines[0].Clock() == nil)) {
			return nil, fmt.Errorf("%w: ratekit.NewMulti: limiter %d has another store than limiter 0, or a Clock where it has none", core.ErrInvalidConfig, i)
		}
		if prefixes[e.Prefix()] {
			return nil, fmt.Errorf("%w: ratekit.NewMulti: limiter %d shares the prefix %q with another", core.ErrInvalidConfig, i, e.Prefix())
		}
		prefixes[e.Prefix()] = true
		m.engines = append(m.engines, e)
		specs[i] = e.Spec()
		m.limit = min(m.limit, e.Limit())
	}
	m.script = engine.MultiScript(specs)
	m.peek = core.NewScript(m.script.Name(), m.script.Lua(), m.script.Twin(), true)
	return m, nil
}

// AllowN decides a request of cost n on key against every limiter, and
// returns each limiter's decision, in order. The request was counted
// (by all of them) exactly when every decision is Allowed. n must be at
// least 1 and at most the smallest limit.
func (m *Multi) AllowN(ctx context.Context, key string, n int64) ([]core.Decision, error) {
	return m.run(ctx, key, n, engine.ModeAllow)
}

// Peek reports the decisions AllowN(ctx, key, 1) would get now, and writes
// nothing.
func (m *Multi) Peek(ctx context.Context, key string) ([]core.Decision, error) {
	return m.run(ctx, key, 1, engine.ModePeek)
}

// Allowed reports whether every decision allowed the request.
func Allowed(ds []core.Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return len(ds) > 0
}

func (m *Multi) run(ctx context.Context, key string, n int64, mode int64) ([]core.Decision, error) {
	if err := keyspace.CheckKey(key); err != nil {
		return nil, err
	}
	if err := params.Cost(n, m.limit); err != nil {
		return nil, err
	}
	e0 := m.engines[0]
	now, err := params.Now(e0.Clock())
	if err != nil {
		return nil, err
	}
	if err := engine.Ended(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, len(m.engines))
	args := []int64{now, n, mode}
	for i, e := range m.engines {
		keys[i] = keyspace.Key(e.Prefix(), key, "")
		args = append(args, e.Params()...)
	}
	s := m.script
	if mode == engine.ModePeek {
		s = m.peek
	}
	reply, err := e0.Runner().RunScript(ctx, s, keys, args, nil)
	if err != nil {
		return nil, err
	}
	if len(reply) != 4*len(m.engines) {
		return nil, fmt.Errorf("%w: %w: %d limits got a reply of %d integers", core.ErrStore, core.ErrUnexpectedReply, len(m.engines), len(reply))
	}
	out := make([]core.Decision, len(m.engines))
	var errs []error
	for i, e := range m.engines {
		out[i], err = e.Decode(key, reply[4*i:4*i+4])
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// same reports whether a and b are the same runner value.
func same(a, b core.ScriptRunner) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && vb.Comparable() && a == b
}
