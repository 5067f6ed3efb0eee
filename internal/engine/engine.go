// Package engine is the part every ratekit limiter shares: it validates a
// call (key, cost, clock), builds the storage key, runs the scripts composed
// from the algorithm's step (see Spec and compose.go) through the store,
// and decodes the reply. An algorithm package declares its Spec and its
// configuration; the public limiter type is ratekit.Limiter.
package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/inproc"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/internal/typednil"
)

// Engine runs one algorithm's scripts for one configuration.
type Engine struct {
	runner core.ScriptRunner
	clock  core.Clock
	prefix string
	limit  int64
	spec   *Spec
	params []int64
	// schedule, when set, sets parameters for each call's time.
	schedule func(now int64, p []int64)
	// borrowKeys: the runner copies any key it keeps (core.KeyCopier), so
	// a decision can lend it a key built in a reused buffer.
	borrowKeys bool
	// local, when set, is the runner itself, a store that runs a step on
	// one key in process (InProcess): Decide and Run use it instead of
	// the one-decision script.
	local inproc.Path
	// prefixHash is local.PrefixHash(prefix).
	prefixHash uint64
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

// New checks the configuration and returns an Engine for spec. limit is
// the Decision's Limit and the largest cost AllowN accepts; raw holds one
// value per spec parameter, in the order of spec.Params (durations as
// their nanoseconds), checked as the spec declares.
func New(runner core.ScriptRunner, clock core.Clock, prefix, defaultPrefix string, limit int64, spec *Spec, raw []int64) (*Engine, error) {
	if err := CheckRunner(runner); err != nil {
		return nil, err
	}
	if prefix == "" {
		prefix = defaultPrefix
	}
	if err := keyspace.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	vals, err := spec.values(raw)
	if err != nil {
		return nil, err
	}
	e := &Engine{runner: runner, clock: clock, prefix: prefix, limit: limit, spec: spec, params: vals}
	e.borrowKeys = LendsKeys(runner)
	if e.local = InProcess(runner); e.local != nil {
		e.prefixHash = e.local.PrefixHash(prefix)
	}
	return e, nil
}

// ErrZero is what a nil Engine's calls return: the engine of a limiter
// that was not built by its New (a zero ratekit.Limiter, a zero
// concurrency.Limiter or Policy).
var ErrZero = fmt.Errorf("%w: a zero limiter: build it with its algorithm's New", core.ErrInvalidConfig)

// The engine's methods answer on a nil Engine: the descriptions are
// empty (no limit, no runner, an unnamed Spec) and the calls return
// ErrZero, so that a limiter declared but never built fails with an error,
// never a panic.

// zeroSpec is a nil Engine's Spec.
var zeroSpec = &Spec{}

// Limit returns the limit decisions report.
func (e *Engine) Limit() int64 {
	if e == nil {
		return 0
	}
	return e.limit
}

// Spec returns the algorithm the engine runs.
func (e *Engine) Spec() *Spec {
	if e == nil {
		return zeroSpec
	}
	return e.spec
}

// Runner, Clock and Prefix return what the engine was built with.
func (e *Engine) Runner() core.ScriptRunner {
	if e == nil {
		return nil
	}
	return e.runner
}

// Clock is the limiter's clock, nil for the store's.
func (e *Engine) Clock() core.Clock {
	if e == nil {
		return nil
	}
	return e.clock
}

// Prefix is the key prefix in use.
func (e *Engine) Prefix() string {
	if e == nil {
		return ""
	}
	return e.prefix
}

// Params returns the script parameters, in the order of Spec().Params,
// as configured: a limiter with a schedule (SetSchedule) changes some of
// them for each call (AppendParams).
func (e *Engine) Params() []int64 { return e.params }

// AppendParams appends to dst the script parameters of a call at now (µs):
// Params, as the schedule, if any, sets them for that time.
func (e *Engine) AppendParams(dst []int64, now int64) []int64 {
	at := len(dst)
	dst = append(dst, e.params...)
	if e.schedule != nil {
		e.schedule(now, dst[at:])
	}
	return dst
}

// SetSchedule makes the engine set some parameters for each call from its
// time: schedule(now, p) overwrites entries of p, a copy of Params (a
// calendar window sets its window's start and length). The engine must
// have a Clock, so that every call's time is known before the call; New
// and SetSchedule run before the engine is used.
func (e *Engine) SetSchedule(schedule func(now int64, p []int64)) error {
	if e.clock == nil {
		return fmt.Errorf("%w: a limiter whose parameters follow the time needs a Clock", core.ErrInvalidConfig)
	}
	e.schedule = schedule
	return nil
}

// Decide validates the call and decides key at cost n in mode (ModeAllow,
// ModePeek or ModeRefund): through the one-decision script, or on a store
// that runs steps in process (InProcess) with the step itself.
func (e *Engine) Decide(ctx context.Context, key string, n int64, mode int64) (core.Decision, error) {
	if e == nil {
		return core.Decision{}, ErrZero
	}
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
	if e.local != nil {
		r, err := e.stepLocal(e.local, key, n, mode, now)
		if err != nil {
			return core.Decision{}, err
		}
		if d, ok := params.Decoded(r, e.limit); ok {
			return d, nil
		}
		return e.Decode(key, r[:])
	}
	s := e.spec.allow
	if mode == ModePeek {
		s = e.spec.peek
	}
	f := frames.Get().(*frame)
	if e.borrowKeys {
		f.key = keyspace.AppendKey(f.key[:0], e.prefix, key, "")
		f.keys[0] = unsafe.String(unsafe.SliceData(f.key), len(f.key))
	} else {
		f.keys[0] = keyspace.Key(e.prefix, key, "")
	}
	args := append(f.args[:0], now, n, mode)
	args = e.AppendParams(args, now)
	var d core.Decision
	reply, err := e.runner.RunScript(ctx, s, f.keys[:], args, f.reply[:0])
	if err == nil {
		d, err = e.Decode(key, reply)
	}
	f.keys[0] = ""
	frames.Put(f)
	return d, err
}

// Decode decodes a reply for key (params.Decision); a refused state
// becomes an error wrapping core.ErrCorruptState that names the algorithm
// and the key.
func (e *Engine) Decode(key string, reply []int64) (core.Decision, error) {
	d, err := params.Decision(reply, e.limit)
	if err != nil {
		return d, e.decodeError(key, err)
	}
	return d, nil
}

// decodeError is Decode's error for a reply params.Decision refused: out
// of Decode, so that decoding a decision stays a few instructions.
//
//go:noinline
func (e *Engine) decodeError(key string, err error) error {
	if err == core.ErrCorruptState {
		return fmt.Errorf("%w: %s state at key %q (prefix %q) was not written by a %s limiter; reset it or use another prefix", core.ErrCorruptState, e.spec.Name, key, e.prefix, e.spec.Name)
	}
	return err
}

// Run validates key and the clock, runs the one-decision script in mode,
// and returns the raw reply. It does not check n.
func (e *Engine) Run(ctx context.Context, key string, n int64, mode int64) ([]int64, error) {
	if e == nil {
		return nil, ErrZero
	}
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
	if e.local != nil {
		r, err := e.stepLocal(e.local, key, n, mode, now)
		if err != nil {
			return nil, err
		}
		return r[:], nil
	}
	args := make([]int64, 0, len(e.params)+3)
	args = append(args, now, n, mode)
	args = e.AppendParams(args, now)
	return e.runner.RunScript(ctx, e.spec.allow, []string{keyspace.Key(e.prefix, key, "")}, args, nil)
}

// Reset deletes key's state.
func (e *Engine) Reset(ctx context.Context, key string) error {
	if e == nil {
		return ErrZero
	}
	if err := keyspace.CheckKey(key); err != nil {
		return err
	}
	if err := Ended(ctx); err != nil {
		return err
	}
	_, err := e.runner.RunScript(ctx, keyspace.ResetScript, []string{keyspace.Key(e.prefix, key, "")}, nil, nil)
	return err
}

// Ended returns an error wrapping core.ErrStore and ctx.Err() when ctx has
// ended, so that a call that cannot finish never reaches the store.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return endedError(err) // out of line: Ended inlines
	}
	return nil
}

//go:noinline
func endedError(err error) error {
	return fmt.Errorf("%w: %w", core.ErrStore, err)
}

// CheckRunner refuses a runner that cannot run scripts: nil, a typed nil
// (a nil *memory.Store in a core.ScriptRunner), or one whose Check
// (core.Checker) fails. The error wraps core.ErrInvalidConfig.
func CheckRunner(runner core.ScriptRunner) error {
	if runner == nil {
		return fmt.Errorf("%w: the runner (the store, a core.ScriptRunner) is nil", core.ErrInvalidConfig)
	}
	if typednil.Is(runner) {
		return fmt.Errorf("%w: the runner (the store) is a nil %T", core.ErrInvalidConfig, runner)
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
	return ok && isSelf(runner, kc.CopiesKeysOf)
}

// isSelf reports whether self(), a method of runner that returns its
// receiver, names runner itself and not a runner embedded in it.
func isSelf(runner core.ScriptRunner, self func() core.ScriptRunner) bool {
	if !reflect.ValueOf(runner).Comparable() {
		return false
	}
	// A comparable type may hold an incomparable value (an interface field
	// holding a slice): compare only values that compare without panicking.
	s := self()
	return s != nil && reflect.TypeOf(s) == reflect.TypeOf(runner) && reflect.ValueOf(s).Comparable() && s == runner
}

// Call returns the one-decision script call AllowN would send for key and
// n now.
func (e *Engine) Call(key string, n int64) (core.ScriptCall, error) {
	if e == nil {
		return core.ScriptCall{}, ErrZero
	}
	if err := keyspace.CheckKey(key); err != nil {
		return core.ScriptCall{}, err
	}
	if err := params.Cost(n, e.limit); err != nil {
		return core.ScriptCall{}, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return core.ScriptCall{}, err
	}
	args := e.AppendParams([]int64{now, n, ModeAllow}, now)
	return core.ScriptCall{Script: e.spec.allow, Keys: []string{keyspace.Key(e.prefix, key, "")}, Args: args}, nil
}
