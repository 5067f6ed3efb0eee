// Package engine is the part every ratekit limiter shares: it validates a
// call (key, cost, clock), builds the storage key, runs the algorithm's
// script through the store, and decodes the reply. An algorithm package
// adds its configuration and its script.
//
// Every algorithm script takes ARGV = {now_us (-1: server TIME), n, the
// algorithm's parameters..., mode} and replies {allowed, remaining,
// retry_after_us, reset_after_us}.
package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// Modes passed as the last script argument.
const (
	ModeAllow  = 0 // decide for n and count it when allowed
	ModePeek   = 1 // decide for n, never write
	ModeAtMost = 2 // allow as many of n as fit (GCRA)
)

// Engine runs one algorithm's scripts for one configuration.
type Engine struct {
	runner core.ScriptRunner
	clock  core.Clock
	prefix string
	limit  int64
	params []int64
	// borrowKeys: the runner copies any key it keeps (core.KeyCopier), so
	// a decision can lend it a key built in a reused buffer.
	borrowKeys bool
}

// frame holds one decision's buffers, reused across calls, so that a
// decision allocates nothing of its own.
type frame struct {
	keys  [1]string
	args  [16]int64
	reply [8]int64
	key   []byte
}

var frames = sync.Pool{New: func() any { return &frame{key: make([]byte, 0, 96)} }}

// New checks the shared configuration and returns an Engine. limit is the
// Decision's Limit and the largest cost AllowN accepts; params are the
// algorithm's script parameters, sent after now and n.
func New(runner core.ScriptRunner, clock core.Clock, prefix, defaultPrefix string, limit int64, params ...int64) (*Engine, error) {
	if err := CheckRunner(runner); err != nil {
		return nil, err
	}
	if prefix == "" {
		prefix = defaultPrefix
	}
	if err := keyspace.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	e := &Engine{runner: runner, clock: clock, prefix: prefix, limit: limit, params: params}
	e.borrowKeys = LendsKeys(runner)
	return e, nil
}

// Ended returns an error wrapping core.ErrStore and ctx.Err() when ctx has
// ended, so that a call that cannot finish never reaches the store.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", core.ErrStore, err)
	}
	return nil
}

// CheckRunner refuses a runner that cannot run scripts: nil, a typed nil
// (a nil *memory.Store in a core.ScriptRunner), or one whose Check
// (core.Checker) fails. The error wraps core.ErrInvalidConfig.
func CheckRunner(runner core.ScriptRunner) error {
	if runner == nil {
		return fmt.Errorf("%w: the runner (the store, a core.ScriptRunner) is nil", core.ErrInvalidConfig)
	}
	switch v := reflect.ValueOf(runner); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		if v.IsNil() {
			return fmt.Errorf("%w: the runner (the store) is a nil %T", core.ErrInvalidConfig, runner)
		}
	}
	if c, ok := runner.(core.Checker); ok {
		if err := c.Check(); err != nil {
			if errors.Is(err, core.ErrInvalidConfig) {
				return err
			}
			return fmt.Errorf("%w: %w", core.ErrInvalidConfig, err)
		}
	}
	return nil
}

// LendsKeys reports whether keys built in reused memory may be lent to
// runner: only when runner promises, for itself and not through an
// embedded runner, to copy every key it keeps (see core.KeyCopier).
func LendsKeys(runner core.ScriptRunner) bool {
	kc, ok := runner.(core.KeyCopier)
	if !ok || !reflect.ValueOf(runner).Comparable() {
		return false
	}
	// A comparable type may hold an incomparable value (an interface field
	// holding a slice): compare only values that compare without panicking.
	self := kc.CopiesKeysOf()
	return self != nil && reflect.TypeOf(self) == reflect.TypeOf(runner) && reflect.ValueOf(self).Comparable() && self == runner
}

// Limit returns the limit decisions report.
func (e *Engine) Limit() int64 { return e.limit }

// Decide validates the call and runs s for key at cost n in mode.
func (e *Engine) Decide(ctx context.Context, s *core.Script, key string, n int64, mode int64) (core.Decision, error) {
	if err := keyspace.CheckKey(key); err != nil {
		return core.Decision{}, err
	}
	if err := params.Cost(n, e.limit); err != nil {
		return core.Decision{}, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return core.Decision{}, err
	}
	if err := Ended(ctx); err != nil {
		return core.Decision{}, err
	}
	f := frames.Get().(*frame)
	if e.borrowKeys {
		f.key = keyspace.AppendKey(f.key[:0], e.prefix, key, "")
		f.keys[0] = unsafe.String(unsafe.SliceData(f.key), len(f.key))
	} else {
		f.keys[0] = keyspace.Key(e.prefix, key, "")
	}
	args := append(f.args[:0], now, n)
	args = append(args, e.params...)
	args = append(args, mode)
	var d core.Decision
	reply, err := e.runner.RunScript(ctx, s, f.keys[:], args, f.reply[:0])
	if err == nil {
		d, err = e.Decode(s, key, reply)
	}
	f.keys[0] = ""
	frames.Put(f)
	return d, err
}

// Decode decodes the reply of s for key (params.Decision); a refused state
// becomes an error wrapping core.ErrCorruptState that names the algorithm
// and the key.
func (e *Engine) Decode(s *core.Script, key string, reply []int64) (core.Decision, error) {
	d, err := params.Decision(reply, e.limit)
	if err == core.ErrCorruptState {
		err = fmt.Errorf("%w: %s state at key %q (prefix %q) was not written by a %s limiter; reset it or use another prefix", core.ErrCorruptState, s.Name(), key, e.prefix, s.Name())
	}
	return d, err
}

// Run validates key and the clock, runs s, and returns the raw reply. It
// does not check n.
func (e *Engine) Run(ctx context.Context, s *core.Script, key string, n int64, mode int64) ([]int64, error) {
	if err := keyspace.CheckKey(key); err != nil {
		return nil, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return nil, err
	}
	if err := Ended(ctx); err != nil {
		return nil, err
	}
	return e.runner.RunScript(ctx, s, []string{keyspace.Key(e.prefix, key, "")}, e.args(now, n, mode), nil)
}

// args returns a script's arguments: now, n, the parameters, mode.
func (e *Engine) args(now, n, mode int64) []int64 {
	args := make([]int64, 0, len(e.params)+3)
	args = append(args, now, n)
	args = append(args, e.params...)
	return append(args, mode)
}

// Reset deletes key's state.
func (e *Engine) Reset(ctx context.Context, key string) error {
	if err := keyspace.CheckKey(key); err != nil {
		return err
	}
	if err := Ended(ctx); err != nil {
		return err
	}
	_, err := e.runner.RunScript(ctx, keyspace.ResetScript, []string{keyspace.Key(e.prefix, key, "")}, nil, nil)
	return err
}

// AllowMany decides every request with s in mode, in order, in one
// RunScripts call when the runner is a core.BatchRunner and one RunScript
// call per request otherwise. Each result carries its own error.
func (e *Engine) AllowMany(ctx context.Context, s *core.Script, reqs []core.Request) []core.Result {
	out := make([]core.Result, len(reqs))
	now, err := params.Now(e.clock)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	calls := make([]core.ScriptCall, 0, len(reqs))
	index := make([]int, 0, len(reqs)) // calls[j] decides reqs[index[j]]
	// One backing array for every call's key and one for every call's
	// arguments: a batch allocates per batch, not per request.
	keys := make([]string, len(reqs))
	size := 0
	for _, r := range reqs {
		size += len(e.prefix) + len(r.Key) + 2
	}
	keyBuf := make([]byte, 0, size) // grows only when keys need escaping
	perCall := len(e.params) + 3
	args := make([]int64, 0, len(reqs)*perCall)
	for i, r := range reqs {
		if err := keyspace.CheckKey(r.Key); err != nil {
			out[i].Err = err
			continue
		}
		if err := params.Cost(r.N, e.limit); err != nil {
			out[i].Err = err
			continue
		}
		// The key's bytes are never written again once appended (a
		// grown buffer is a copy), so the string may share them.
		at := len(keyBuf)
		keyBuf = keyspace.AppendKey(keyBuf, e.prefix, r.Key, "")
		keys[i] = unsafe.String(&keyBuf[at], len(keyBuf)-at)
		start := len(args)
		args = append(args, now, r.N)
		args = append(args, e.params...)
		args = append(args, ModeAllow)
		calls = append(calls, core.ScriptCall{Script: s, Keys: keys[i : i+1 : i+1], Args: args[start:len(args):len(args)]})
		index = append(index, i)
	}
	if err := Ended(ctx); err != nil {
		for _, i := range index {
			out[i].Err = err
		}
		return out
	}
	if br, ok := e.runner.(core.BatchRunner); ok {
		results := br.RunScripts(ctx, calls)
		for j, i := range index {
			if j >= len(results) || len(results) != len(calls) {
				// A store that answers a batch of n with another number of
				// results cannot be trusted on any of them.
				out[i].Err = fmt.Errorf("%w: %w: a batch of %d calls got %d results", core.ErrStore, core.ErrUnexpectedReply, len(calls), len(results))
				continue
			}
			res := results[j]
			if res.Err != nil {
				out[i].Err = res.Err
				continue
			}
			out[i].Decision, out[i].Err = e.Decode(s, reqs[i].Key, res.Reply)
		}
		return out
	}
	var reply [8]int64 // decoded before the next call reuses it
	for j, c := range calls {
		i := index[j]
		r, err := e.runner.RunScript(ctx, c.Script, c.Keys, c.Args, reply[:0])
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Decision, out[i].Err = e.Decode(s, reqs[i].Key, r)
	}
	return out
}
