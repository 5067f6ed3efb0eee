// Package engine is the part every ratekit limiter shares. An Engine
// decides requests on a user key against its limits (one for an
// algorithm's limiter, several for a policy): it checks a call (key, cost,
// clock, context), builds the storage keys and the arguments, runs the
// script composed from its limits' steps (compose.go) through the store,
// or the same steps in process on a store that keeps its state here
// (core.LocalStore), and decodes the reply. One routine does this for
// every call: one decision (Decide), a batch (AllowMany), a coalesced
// batch (Coalescer) and a reset; a policy's calls are the same calls with
// more keys per request. An algorithm package declares its Spec and its
// configuration; the public limiter type is ratekit.Limiter (public.go).
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// MaxLimits is the most limits an Engine decides: ratekit.MaxPolicyLimits.
const MaxLimits = 16

// Config is what an Engine is built from.
type Config struct {
	// Store runs the scripts.
	Store core.ScriptRunner
	// Clock gives every call's time; nil means the store's.
	Clock core.Clock
	// Limits are decided at once, in this order: one for an algorithm's
	// limiter, up to MaxLimits for a policy.
	Limits []Limit
	// Policy makes every decision name its limits (core.Decision.Limits),
	// lets limits run in shadow and start penalty blocks.
	Policy bool
	// PenaltyPrefix is the key prefix of penalty blocks, used when a limit
	// has a Penalty.
	PenaltyPrefix string
	// OnShadowDeny, in a policy, is called after every allowed request a
	// shadow limit would have denied.
	OnShadowDeny func(ctx context.Context, key string, d core.Decision)
	// Keyed makes a policy decide only requests that give Keys, so that
	// its limits may share a prefix (ratekit.PolicyConfig.Keyed).
	Keyed bool
}

// Engine decides requests against its limits, through one store.
type Engine struct {
	runner core.ScriptRunner
	clock  core.Clock
	limits []Limit
	sh     shape
	rw, ro *core.Script
	// penalty is the penalty key prefix, "" when no limit has a penalty.
	penalty string
	// keyed: every request gives Keys (Config.Keyed).
	keyed bool
	// args are the limits' arguments as ARGV holds them after now and
	// mode (shadow and penalty in a policy, then the parameters); when
	// scheduled, a limit's Schedule changes some of them for each call.
	args      []int64
	scheduled bool
	// own is args as the step takes them (Args), in an engine of one
	// limit.
	own      Args
	maxCost  int64
	onShadow func(ctx context.Context, key string, d core.Decision)
	// local is the store when it decides in process.
	local core.LocalStore
}

// ErrZero is what a nil Engine's calls return: the engine of a limiter
// that was not built by its New (a zero ratekit.Limiter or
// concurrency.Limiter).
var ErrZero = fmt.Errorf("%w: a zero limiter: build it with its algorithm's New", core.ErrInvalidConfig)

// New checks cfg and returns its Engine. It touches no store. An error
// wraps core.ErrInvalidConfig.
func New(cfg Config) (*Engine, error) {
	if err := checkStore(cfg.Store); err != nil {
		return nil, err
	}
	if err := params.CheckClock(cfg.Clock); err != nil {
		return nil, err
	}
	if len(cfg.Limits) == 0 || len(cfg.Limits) > MaxLimits || (!cfg.Policy && len(cfg.Limits) > 1) {
		return nil, fmt.Errorf("%w: %d limits", core.ErrInvalidConfig, len(cfg.Limits))
	}
	e := &Engine{
		runner:   cfg.Store,
		clock:    cfg.Clock,
		limits:   append([]Limit(nil), cfg.Limits...),
		maxCost:  params.MaxCount,
		onShadow: cfg.OnShadowDeny,
		keyed:    cfg.Keyed,
	}
	e.sh.policy = cfg.Policy
	for _, l := range e.limits {
		if l.Spec == nil {
			return nil, fmt.Errorf("%w: a limit without an algorithm", core.ErrInvalidConfig)
		}
		if l.Schedule != nil {
			if cfg.Clock == nil {
				return nil, fmt.Errorf("%w: a %s limit, whose parameters follow the time, needs a Clock", core.ErrInvalidConfig, l.Spec.Name)
			}
			e.scheduled = true
		}
		if cfg.Policy {
			var shadow int64
			if l.Shadow {
				shadow = 1
			}
			e.args = append(e.args, shadow, l.Penalty)
			if l.Penalty != 0 {
				e.penalty = cfg.PenaltyPrefix
			}
		}
		e.args = append(e.args, l.Params...)
		e.sh.specs = append(e.sh.specs, l.Spec)
		e.maxCost = min(e.maxCost, l.Max)
	}
	e.sh.penalty = e.penalty != ""
	if cfg.Policy {
		e.rw, e.ro = e.sh.compose()
	} else {
		e.rw, e.ro = e.limits[0].Spec.rw, e.limits[0].Spec.ro
		e.own = argsOf(e.args)
	}
	e.local, _ = cfg.Store.(core.LocalStore)
	return e, nil
}

// checkStore refuses a store that cannot run scripts: nil, or one whose
// StoreName (core.StoreNamer) is "" (a nil or zero value of a ratekit
// store).
func checkStore(s core.ScriptRunner) error {
	if s == nil {
		return fmt.Errorf("%w: the store is nil", core.ErrInvalidConfig)
	}
	if n, ok := s.(core.StoreNamer); ok && n.StoreName() == "" {
		return fmt.Errorf("%w: the store is a nil or zero %T, not built by its New", core.ErrInvalidConfig, s)
	}
	return nil
}

// The engine's accessors answer on a nil Engine (an unbuilt limiter):
// nothing, and 0 for MaxCost.

// Store returns the store the engine runs on.
func (e *Engine) Store() core.ScriptRunner {
	if e == nil {
		return nil
	}
	return e.runner
}

// Clock returns the engine's clock, nil for the store's.
func (e *Engine) Clock() core.Clock {
	if e == nil {
		return nil
	}
	return e.clock
}

// Limits returns the engine's limits; treat them as read-only.
func (e *Engine) Limits() []Limit {
	if e == nil {
		return nil
	}
	return e.limits
}

// Policy reports whether the engine decides a policy.
func (e *Engine) Policy() bool { return e != nil && e.sh.policy }

// PenaltyPrefix returns the prefix of the penalty blocks, "" when no
// limit has a penalty.
func (e *Engine) PenaltyPrefix() string {
	if e == nil {
		return ""
	}
	return e.penalty
}

// MaxCost returns the largest cost a request may have: the smallest of
// the limits' Max; 0 on a nil Engine.
func (e *Engine) MaxCost() int64 {
	if e == nil {
		return 0
	}
	return e.maxCost
}

// Name returns the algorithm's name, or "policy".
func (e *Engine) Name() string {
	switch {
	case e == nil:
		return ""
	case e.sh.policy:
		return "policy"
	}
	return e.limits[0].Spec.Name
}

// AtMost reports whether the engine's one limit grants part of a request
// (Spec.AtMost).
func (e *Engine) AtMost() bool {
	return e != nil && !e.sh.policy && e.limits[0].Spec.AtMost
}

// appendArgs appends the limits' arguments of a call at now: each
// limit's own parameters, or those the request gave (ps, checked by
// given), set for now by their schedule.
func (e *Engine) appendArgs(dst []int64, now int64, ps []core.Params) []int64 {
	if len(ps) == 0 && !e.scheduled {
		return append(dst, e.args...)
	}
	for i := range e.limits {
		l := &e.limits[i]
		if e.sh.policy {
			var shadow int64
			if l.Shadow {
				shadow = 1
			}
			dst = append(dst, shadow, l.Penalty)
		}
		k := len(l.Params)
		switch {
		case i < len(ps) && ps[i] != nil:
			p := ps[i].(Params)
			if p.sched != nil {
				p.vals = p.sched.Set(now, p.vals)
			}
			dst = append(dst, p.vals[:k]...)
		case l.Schedule != nil:
			a := l.Schedule.Set(now, argsOf(l.Params))
			dst = append(dst, a[:k]...)
		default:
			dst = append(dst, l.Params...)
		}
	}
	return dst
}

// check checks a call as every decision does, in this order: the key,
// the cost (1 to maxCost), the clock, the context. It returns the call's
// time: the clock's, or params.ServerTime.
func (e *Engine) check(ctx context.Context, key string, n, maxCost int64) (int64, error) {
	if e == nil {
		return 0, ErrZero
	}
	if err := keyspace.CheckKey(key); err != nil {
		return 0, err
	}
	if err := params.Cost(n, maxCost); err != nil {
		return 0, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return 0, err
	}
	return now, Ended(ctx)
}

// Decide decides key at cost n in mode (ModeAllow, ModePeek or
// ModeRefund), against the engine's own limits.
func (e *Engine) Decide(ctx context.Context, key string, n int64, mode Mode) (core.Decision, error) {
	return e.decideOne(ctx, key, n, mode, nil)
}

// decideOne is Decide, or DecideRequest for r when r is not nil (key
// and n are then r's, and mode is r.Op's): the common request, decided
// here against the engine's own limits, or, on an engine of one limit in
// process, against the one limit r gives; any other request, or Params
// that are not for that limit, take DecideRequest's whole path
// (decideRequest), which says what is wrong.
func (e *Engine) decideOne(ctx context.Context, key string, n int64, mode Mode, r *core.Request) (core.Decision, error) {
	var one *Params
	if r != nil {
		if r.Keys != nil || r.Op > core.OpRefund || len(r.Params) > 1 {
			return e.decideRequest(ctx, *r)
		}
		mode = modeOf(r.Op)
		if len(r.Params) == 1 {
			if e == nil || e.local == nil || e.sh.policy {
				return e.decideRequest(ctx, *r)
			}
			// The limit read out of its interface once, checked as given
			// checks it, then read through one. (A type switch copies the
			// 72 bytes once; a comma-ok assertion costs 9 instructions
			// more, zeroing them for the failed case.)
			switch p := r.Params[0].(type) {
			case nil:
			case Params:
				if p.spec != e.limits[0].Spec || p.sched != nil && e.clock == nil {
					return e.decideRequest(ctx, *r)
				}
				one = &p
			default:
				return e.decideRequest(ctx, *r)
			}
		}
	}
	// check's checks, written out on the hot path: the call would cost a
	// twentieth of a decision in process.
	if e == nil {
		return core.Decision{}, ErrZero
	}
	if e.keyed {
		return core.Decision{}, e.checkKeys(nil)
	}
	if err := keyspace.CheckKey(key); err != nil {
		return core.Decision{}, err
	}
	maxCost := e.maxCost
	if one != nil {
		maxCost = min(one.max, params.MaxCount)
	}
	if err := params.Cost(n, maxCost); err != nil {
		return core.Decision{}, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return core.Decision{}, err
	}
	if err := Ended(ctx); err != nil {
		return core.Decision{}, err
	}
	if e.local == nil || e.sh.policy {
		return e.decide(ctx, key, n, mode, now, nil, nil)
	}
	// The common decision in process, in memory of its own: no frame,
	// and the reply decoded inline (the same routine, e.script and
	// e.decode, specialized for one limit on a local store).
	rep, err := e.inProcess1(key, n, mode, now, one)
	if err != nil {
		return core.Decision{}, err
	}
	l := &e.limits[0]
	max, window := l.Max, l.Window
	if one != nil {
		max, window = one.max, one.window
	}
	if d, ok := params.Decoded(rep, max); ok {
		d.Window = window
		return d, nil
	}
	return core.Decision{}, e.decodeError(0, key, rep[:])
}

// DecideRequest decides *r (core.Limiter.Decide): in the mode its Op
// names, against the limits it gives, or the engine's own, at its Key
// (and its limits' own Keys under it). It does not keep r.
//
// It inlines into its caller, and decideOne reads the request where the
// caller holds it: no copy of it, and no frame of its own.
func (e *Engine) DecideRequest(ctx context.Context, r *core.Request) (core.Decision, error) {
	return e.decideOne(ctx, r.Key, r.N, 0, r)
}

// decideRequest is DecideRequest's whole path.
func (e *Engine) decideRequest(ctx context.Context, r core.Request) (core.Decision, error) {
	mode, err := ModeOf(r.Op)
	if err != nil {
		return core.Decision{}, err
	}
	if e == nil {
		return core.Decision{}, ErrZero
	}
	if err := keyspace.CheckKey(r.Key); err != nil {
		return core.Decision{}, err
	}
	if err := e.checkKeys(r.Keys); err != nil {
		return core.Decision{}, err
	}
	maxCost, err := e.given(r.Params)
	if err != nil {
		return core.Decision{}, err
	}
	if err := params.Cost(r.N, maxCost); err != nil {
		return core.Decision{}, err
	}
	now, err := params.Now(e.clock)
	if err != nil {
		return core.Decision{}, err
	}
	if err := Ended(ctx); err != nil {
		return core.Decision{}, err
	}
	return e.decide(ctx, r.Key, r.N, mode, now, r.Params, r.Keys)
}

// ModeOf returns the mode of a request's Op, or an error wrapping
// core.ErrInvalidConfig for an Op that is none of core's.
func ModeOf(op core.Op) (Mode, error) {
	if op > core.OpRefund {
		return 0, opError(op)
	}
	return modeOf(op), nil
}

// modeOf is the mode of op, one of core's Ops: OpAllow and OpPeek are
// ModeAllow and ModePeek, OpRefund is ModeRefund (TestModeOf).
func modeOf(op core.Op) Mode {
	if op == core.OpRefund {
		return ModeRefund
	}
	return Mode(op)
}

// opError is ModeOf's error, out of line so that ModeOf inlines.
//
//go:noinline
func opError(op core.Op) error {
	return fmt.Errorf("%w: the request's Op is %v, not OpAllow, OpPeek or OpRefund", core.ErrInvalidConfig, op)
}

// decide decides one checked request at now, against the limits ps
// gives (nil: the engine's own), at key and each limit's own key under
// it (keys, nil for none), in process or through the script.
func (e *Engine) decide(ctx context.Context, key string, n int64, mode Mode, now int64, ps []core.Params, keys []string) (core.Decision, error) {
	var reply []int64
	var err error
	if e.local != nil && keys == nil {
		// In process: the reply fits on the stack, and no pool is needed
		// (one emptied by a GC, or by the race detector, would make the
		// decision allocate); only as much is zeroed as a policy of a
		// few limits needs.
		var small [4*4 + 2]int64
		buf := small[:0]
		if len(e.limits) > 4 {
			var large [4*MaxLimits + 2]int64
			buf = large[:0]
		}
		reply, err = e.inProcess(key, n, mode, now, ps, buf)
	} else {
		f := frames.Get().(*frame)
		defer f.put()
		reply, err = e.script(ctx, f, key, n, mode, now, ps, keys)
	}
	if err != nil {
		return core.Decision{}, err
	}
	d, err := e.decode(key, reply, ps)
	if mode == ModeAllow {
		e.shadowDeny(ctx, key, d, err)
	}
	return d, err
}

// shadowDeny calls the policy's OnShadowDeny, on the caller's goroutine
// and with its ctx, when an AllowN decision d allowed a request that a
// shadow limit would have denied: after every such request, however it
// was decided (Decide, AllowMany, a coalesced batch).
func (e *Engine) shadowDeny(ctx context.Context, key string, d core.Decision, err error) {
	if err == nil && e.onShadow != nil && d.Allowed && d.DeniedBy(true) != nil {
		e.onShadow(ctx, key, d)
	}
}

// AllowAtMost allows as many units of a request of cost n as fit now, at
// least 1 and at most n, and returns how many it granted (0 when denied),
// on an engine whose limit grants part of a request (AtMost); n may be
// up to params.MaxCount. Other engines return an error wrapping
// errors.ErrUnsupported.
func (e *Engine) AllowAtMost(ctx context.Context, key string, n int64) (int64, core.Decision, error) {
	if e != nil && !e.AtMost() {
		return 0, core.Decision{}, fmt.Errorf("ratekit: %s does not grant part of a request: %w", e.Name(), errors.ErrUnsupported)
	}
	now, err := e.check(ctx, key, n, params.MaxCount)
	if err != nil {
		return 0, core.Decision{}, err
	}
	var reply []int64
	if e.local != nil {
		var buf [4]int64
		reply, err = e.inProcess(key, n, ModeAtMost, now, nil, buf[:0])
	} else {
		f := frames.Get().(*frame)
		defer f.put()
		reply, err = e.script(ctx, f, key, n, ModeAtMost, now, nil, nil)
	}
	if err != nil {
		return 0, core.Decision{}, err
	}
	var granted int64
	if len(reply) == 4 && reply[0] >= 1 && reply[0] <= n {
		// The decoder wants 0 or 1; the count goes to granted.
		granted, reply[0] = reply[0], 1
	}
	d, err := e.decode(key, reply, nil)
	if err != nil {
		return 0, core.Decision{}, err
	}
	return granted, d, nil
}

// script decides one request, checked, at now, against the limits ps
// gives (nil: the engine's own), at key and each limit's own key under it
// (keys), through the composed script, into f's reply buffer. (On a local
// store, requests without keys are decided in process instead.)
func (e *Engine) script(ctx context.Context, f *frame, key string, n int64, mode Mode, now int64, ps []core.Params, keys []string) ([]int64, error) {
	f.keys, f.key = e.appendKeys(f.keys[:0], f.key[:0], key, keys)
	f.args = append(e.appendArgs(append(f.args[:0], now, int64(mode)), now, ps), n)
	s := e.rw
	if mode == ModePeek {
		s = e.ro
	}
	reply, err := e.runner.RunScript(ctx, s, f.keys, f.args, f.reply[:0])
	if cap(reply) > cap(f.reply) {
		f.reply = reply
	}
	return reply, err
}

// appendKeys appends the storage keys of one request on key (one per
// limit, each under its own key of own when it is not nil, then the
// penalty key) to keys, building them in buf, which it grows first so
// that no append moves what the strings point to.
func (e *Engine) appendKeys(keys []string, buf []byte, key string, own []string) ([]string, []byte) {
	if need := e.keyBytes(key, own); cap(buf)-len(buf) < need {
		buf = make([]byte, 0, len(buf)+need)
	}
	for i := range e.limits {
		at := len(buf)
		suffix := ""
		if own != nil {
			suffix = own[i]
		}
		buf = keyspace.AppendKey(buf, e.limits[i].Prefix, key, suffix)
		keys = append(keys, unsafe.String(&buf[at], len(buf)-at))
	}
	if e.penalty != "" {
		at := len(buf)
		buf = keyspace.AppendKey(buf, e.penalty, key, "")
		keys = append(keys, unsafe.String(&buf[at], len(buf)-at))
	}
	return keys, buf
}

// keyBytes is the most bytes appendKeys writes for key and own.
func (e *Engine) keyBytes(key string, own []string) int {
	need := 0
	for i := range e.limits {
		need += len(e.limits[i].Prefix) + 3*len(key) + 2 // an escaped byte takes three
		if own != nil {
			need += len(own[i])
		}
	}
	if e.penalty != "" {
		need += len(e.penalty) + 3*len(key) + 2
	}
	return need
}

// Reset deletes key's state in every limit, and its penalty block.
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
	f := frames.Get().(*frame)
	defer f.put()
	if e.local != nil {
		tx, first, err := e.local.Lock(key, e.limits[0].Prefix)
		if err != nil {
			return err
		}
		var buf [MaxLimits + 1]string
		for _, k := range e.policyKeys(buf[:0], tx, first) {
			tx.Del(k)
		}
		return e.local.Unlock(tx)
	}
	f.keys, f.key = e.appendKeys(f.keys[:0], f.key[:0], key, nil)
	_, err := e.runner.RunScript(ctx, keyspace.ResetScript, f.keys, nil, f.reply[:0])
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

// decode turns one request's reply into its decision: a limit's, or a
// policy's with each limit's, made against the limits ps gives (nil: the
// engine's own). A refused state becomes an error wrapping
// core.ErrCorruptState that names the algorithm and the key.
func (e *Engine) decode(key string, r []int64, ps []core.Params) (core.Decision, error) {
	if !e.sh.policy {
		max, window := e.applied(ps, 0)
		if len(r) == 4 {
			if d, ok := params.Decoded([4]int64(r), max); ok {
				d.Window = window
				return d, nil
			}
		}
		return core.Decision{}, e.decodeError(0, key, r)
	}
	L := len(e.limits)
	if len(r) != 4*L+2 {
		return core.Decision{}, fmt.Errorf("%w: %w: %d limits got a reply of %d integers", core.ErrStore, core.ErrUnexpectedReply, L, len(r))
	}
	block := r[4*L:]
	if block[0] < 0 {
		return core.Decision{}, fmt.Errorf("%w: the penalty block at key %q (prefix %q) was not written by a ratekit policy; reset it or use another PenaltyPrefix", core.ErrCorruptState, key, e.penalty)
	}
	d := core.Decision{Limits: make([]core.LimitDecision, L), Blocked: block[1] == 1}
	var errs []error
	bind, deniedBy := -1, -1 // the enforced limits with the least Remaining, and the longest RetryAfter of a denial
	for i := range e.limits {
		l := &e.limits[i]
		max, window := e.applied(ps, i)
		ld, ok := params.Decoded([4]int64(r[4*i:4*i+4]), max)
		if !ok {
			errs = append(errs, e.decodeError(i, key, r[4*i:4*i+4]))
			continue
		}
		ld.Window = window
		d.Limits[i] = core.LimitDecision{Name: l.Name, Shadow: l.Shadow, Decision: ld}
		if l.Shadow {
			continue
		}
		if !ld.Allowed && (deniedBy < 0 || ld.RetryAfter > d.Limits[deniedBy].RetryAfter) {
			deniedBy = i
		}
		if bind < 0 || ld.Remaining < d.Limits[bind].Remaining {
			bind = i
		}
	}
	if len(errs) > 0 {
		return core.Decision{}, errors.Join(errs...)
	}
	switch {
	case deniedBy >= 0:
		bind = deniedBy
	case bind < 0:
		// Every limit in shadow: the one with the least Remaining.
		for i := range d.Limits {
			if bind < 0 || d.Limits[i].Remaining < d.Limits[bind].Remaining {
				bind = i
			}
		}
	}
	b := d.Limits[bind].Decision
	d.Allowed = deniedBy < 0 && !d.Blocked
	d.Limit, d.Remaining, d.ResetAfter, d.Window = b.Limit, b.Remaining, b.ResetAfter, b.Window
	if deniedBy >= 0 {
		d.RetryAfter = b.RetryAfter
	}
	if d.Blocked {
		d.RetryAfter = max(d.RetryAfter, time.Duration(block[0])*time.Microsecond)
		d.Remaining = 0
	}
	return d, nil
}

// decodeError is decode's error for limit i's reply r: out of decode, so
// that decoding a decision stays a few instructions.
//
//go:noinline
func (e *Engine) decodeError(i int, key string, r []int64) error {
	_, err := params.Decision(r, 0)
	if err == core.ErrCorruptState {
		l := &e.limits[i]
		return fmt.Errorf("%w: %s state at key %q (prefix %q) was not written by a %s limiter; reset it or use another prefix", core.ErrCorruptState, l.Spec.Name, key, l.Prefix, l.Spec.Name)
	}
	return err
}

// frame holds one call's buffers, reused across calls, so that a decision
// allocates nothing of its own: the keys (built in key), the arguments and
// the reply.
type frame struct {
	keys  []string
	key   []byte
	args  []int64
	reply []int64
}

var frames = sync.Pool{New: func() any {
	return &frame{keys: make([]string, 0, 2), key: make([]byte, 0, 96), args: make([]int64, 0, 16), reply: make([]int64, 0, 8)}
}}

// put clears the keys, which point into key, and returns f to the pool.
func (f *frame) put() {
	clear(f.keys)
	frames.Put(f)
}

// checkPrefix is keyspace.CheckPrefix.
func checkPrefix(prefix string) error { return keyspace.CheckPrefix(prefix) }

// Call returns the script call AllowN(ctx, key, n) would send to a store
// that runs scripts, now: for the benchmarks, which give it to
// redis-benchmark, and for tests.
func (e *Engine) Call(key string, n int64) (core.ScriptCall, error) {
	now, err := e.check(context.Background(), key, n, e.MaxCost())
	if err != nil {
		return core.ScriptCall{}, err
	}
	keys, _ := e.appendKeys(nil, nil, key, nil)
	args := append(e.appendArgs([]int64{now, int64(ModeAllow)}, now, nil), n)
	return core.ScriptCall{Script: e.rw, Keys: keys, Args: args}, nil
}
