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
	if !e.sh.policy {
		var one *Params
		if len(ps) > 0 && ps[0] != nil {
			p := ps[0].(Params)
			one = &p
		}
		r, err := e.inProcess1(key, n, mode, now, one)
		if err != nil {
			return nil, err
		}
		return append(reply, r[0], r[1], r[2], r[3]), nil
	}
	tx, first, err := e.local.Lock(key, e.limits[0].Prefix)
	if err != nil {
		return nil, err
	}
	// The deferred call unlocks only when a step panics (a bug in it): its
	// recover turns the panic into the call's error and the store stays
	// usable. Otherwise the unlock below runs, without a call to recover.
	done := false
	defer func() {
		if !done {
			out, err = nil, e.panicked(tx, recover())
		}
	}()
	c := call(tx, now)
	c.N, c.Mode = n, mode
	args := e.args
	if e.scheduled || len(ps) > 0 {
		// The request's or the schedule's copy of the parameters, on the
		// stack (steps take theirs by value: Args): only as much zeroed
		// as a policy of a few limits needs.
		var small [4 * (2 + maxParams)]int64
		buf := small[:0]
		if len(e.args) > len(small) {
			var large [MaxLimits * (2 + maxParams)]int64
			buf = large[:0]
		}
		args = e.appendArgs(buf, now, ps)
	}
	var buf [MaxLimits + 1]string
	out = e.sh.decidePolicy(tx, e.policyKeys(buf[:0], tx, first), c, args, reply)
	done = true
	return out, e.local.Unlock(tx)
}

// inProcess1 is inProcess for an engine of one limit, the common
// decision, written out (shape.decide's one limit) and returning its
// reply in registers: one is the limit the request gave (nil: the
// engine's own). The step takes its parameters by value (Args): the
// engine's, the request's, or a schedule's copy of either.
func (e *Engine) inProcess1(key string, n int64, mode Mode, now int64, one *Params) (r Reply, err error) {
	tx, k, err := e.local.Lock(key, e.limits[0].Prefix)
	if err != nil {
		return r, err
	}
	done := false // as in inProcess
	defer func() {
		if !done {
			r, err = Reply{}, e.panicked(tx, recover())
		}
	}()
	c := call(tx, now)
	c.N, c.Mode = n, mode
	args := e.own
	switch {
	case one != nil:
		args = one.vals
		if one.sched != nil {
			args = one.sched.Set(now, args)
		}
	case e.scheduled:
		args = e.limits[0].Schedule.Set(now, args)
	}
	r, st := e.sh.specs[0].Step(tx, k, c, args)
	commit(tx, k, &st)
	done = true
	return r, e.local.Unlock(tx)
}

// panicked unlocks tx after a step panicked with p, and returns the
// call's error.
func (e *Engine) panicked(tx core.Tx, p any) error {
	e.local.Unlock(tx)
	return fmt.Errorf("%w: %s: the step panicked: %v", core.ErrStore, e.sh.name(), p)
}

// policyKeys appends to keys a policy's storage keys for the locked user
// key: one per limit (the first, first, is what Lock found), then the
// penalty block's.
func (e *Engine) policyKeys(keys []string, tx core.Tx, first string) []string {
	keys = append(keys, first)
	for i := 1; i < len(e.limits); i++ {
		keys = append(keys, e.local.Key(tx, e.limits[i].Prefix))
	}
	if e.penalty != "" {
		keys = append(keys, e.local.Key(tx, e.penalty))
	}
	return keys
}
