package engine

import (
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/inproc"
)

// InProcess returns runner's in-process path when decisions on one key
// may skip the script and run the step on it directly: when runner is an
// inproc.Store itself, not a type that embeds one (see inproc), and nil
// otherwise. A runner that wraps a store (to count, trace or break its
// calls) is then always called through RunScript.
func InProcess(runner core.ScriptRunner) inproc.Path {
	s, ok := runner.(inproc.Store)
	if !ok {
		return nil
	}
	self, path := s.InProcessOf()
	if path == nil || !isSelf(runner, func() core.ScriptRunner { return self }) {
		return nil
	}
	return path
}

// stepLocal makes one decision on key with the algorithm's step, on a
// store that runs it in process: what the one-decision script's twin
// (singleTwin) does, with the same step and the same commit, minus the
// script call around them. now is the limiter's time, or ServerTime.
func (e *Engine) stepLocal(st inproc.Path, key string, n, mode, now int64) (r Reply, err error) {
	tx, skey, err := st.Lock(e.prefix, e.prefixHash, key)
	if err != nil {
		return r, err
	}
	// The deferred call unlocks only when the step panics: its recover
	// then turns the panic into Unlock's error. Otherwise the unlock
	// below runs, without a call to recover.
	done := false
	defer func() {
		if !done {
			err = st.Unlock(tx, e.spec.Name, recover())
		}
	}()
	c := call(tx, now)
	c.N, c.Mode = n, mode
	p := e.params
	if e.schedule != nil {
		// Memory the store lends for the call: the schedule's copy of
		// the parameters allocates nothing.
		p = e.AppendParams(Scratch(tx, len(e.params))[:0], now)
	}
	r, state := e.spec.Step(tx, skey, c, p)
	commit(tx, skey, &state)
	done = true
	return r, st.Unlock(tx, e.spec.Name, nil)
}
