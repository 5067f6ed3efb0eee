package engine

import (
	"fmt"

	"github.com/ratekit/ratekit/core"
)

// inProcess decides one request on a store that keeps its state in this
// process (core.LocalStore): what the composed script's twin does for it
// (shape.decide, the same steps and commits), minus the script call
// around them. now is the limiter's time, or params.ServerTime; ps the
// limits the request gave (nil: the engine's own). The reply is appended
// to reply.
func (e *Engine) inProcess(key string, n int64, mode Mode, now int64, ps []core.Params, reply []int64) (out []int64, err error) {
	tx, err := e.local.Lock(key)
	if err != nil {
		return nil, err
	}
	// The deferred call unlocks only when a step panics (a bug in it): its
	// recover turns the panic into the call's error and the store stays
	// usable. Otherwise the unlock below runs, without a call to recover.
	done := false
	defer func() {
		if !done {
			p := recover()
			e.local.Unlock(tx)
			out, err = nil, fmt.Errorf("%w: %s: the step panicked: %v", core.ErrStore, e.sh.name(), p)
		}
	}()
	t := tx
	c := call(t, now)
	c.N, c.Mode = n, mode
	args := e.args
	if e.scheduled || len(ps) > 0 {
		// Memory the store lends for the call: the request's or the
		// schedule's copy of the parameters allocates nothing.
		args = e.appendArgs(Scratch(t, len(e.args))[:0], now, ps)
	}
	if e.sh.policy {
		out = e.sh.decidePolicy(t, e.policyKeys(tx), c, args, reply)
	} else {
		// shape.decide's one limit, written out: the call would cost a
		// tenth of a decision (go test -bench InProcess, store/memory).
		key := e.local.Key(tx, e.limits[0].Prefix)
		r, st := e.sh.specs[0].Step(t, key, c, args)
		commit(t, key, &st)
		out = append(reply, r[0], r[1], r[2], r[3])
	}
	done = true
	return out, e.local.Unlock(tx)
}

// policyKeys returns a policy's storage keys for the locked user key: one
// per limit, then the penalty block's.
func (e *Engine) policyKeys(tx core.Tx) []string {
	keys := make([]string, 0, len(e.limits)+1)
	for i := range e.limits {
		keys = append(keys, e.local.Key(tx, e.limits[i].Prefix))
	}
	if e.penalty != "" {
		keys = append(keys, e.local.Key(tx, e.penalty))
	}
	return keys
}
