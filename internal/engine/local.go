package engine

import (
	"fmt"

	"github.com/ratekit/ratekit/core"
)

// inProcess decides one request on a store that keeps its state in this
// process (core.LocalStore): what the composed script's twin does for it
// (shape.decide, the same steps and commits), minus the script call
// around them. now is the limiter's time, or params.ServerTime. The reply
// is appended to reply.
func (e *Engine) inProcess(key string, n int64, mode Mode, now int64, reply []int64) (out []int64, err error) {
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
			tx.Unlock()
			out, err = nil, fmt.Errorf("%w: %s: the step panicked: %v", core.ErrStore, e.sh.name(), p)
		}
	}()
	var buf [MaxLimits + 1]string
	keys := buf[:0]
	for i := range e.limits {
		keys = append(keys, tx.Key(e.limits[i].Prefix))
	}
	if e.penalty != "" {
		keys = append(keys, tx.Key(e.penalty))
	}
	c := call(tx, now)
	c.N, c.Mode = n, mode
	args := e.args
	if e.scheduled {
		// Memory the store lends for the call: the schedule's copy of
		// the parameters allocates nothing.
		args = e.appendArgs(Scratch(tx, len(e.args))[:0], now)
	}
	out = e.sh.decide(tx, keys, c, args, reply)
	done = true
	return out, tx.Unlock()
}
