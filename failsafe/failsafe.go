// Package failsafe decides what a limiter does when its store fails or is
// too slow: fail open (allow), fail closed (deny), or fall back to a local
// limiter (a memory-store limiter with the same configuration: degraded,
// since each process then limits on its own, but still limiting). It wraps
// any core.Limiter: an algorithm's limiter, a policy, a tier's policy, a
// coalescing limiter, or another wrapper.
//
// Every call to the store gets a timeout. After a failure, the store is left
// alone for RetryInterval, and the Mode decides. Then one call (and only
// one, however many are waiting) probes the store while the others go on
// with the Mode; once a probe answers, decisions come from the store
// again, and if it fails the store is left alone for another RetryInterval.
// So at most one call per RetryInterval waits on a failing store (more only
// when Timeout is longer than RetryInterval).
// Every store error goes to OnError; none is swallowed silently. The
// store's state changes go to Config.Logger (slog.Default() when nil): one
// line when the store fails and the Mode starts deciding, one when it
// answers again, however long the outage and however many calls fail in it.
// [Limiter.State] reports the state (up, down, probing) for metrics.
//
// # Timeouts do not depend on the client
//
// failsafe enforces Timeout (and the caller's own context) itself, whatever
// the client's options: the store call runs in its own goroutine, and the
// caller gets the Mode's decision at the deadline even if the client
// ignores its context (go-redis without ContextTimeoutEnabled waits for
// its ReadTimeout, 5 s by default). The abandoned call goes on in the
// background until the client gives up or the store answers; its late
// answer is dropped, never returned, never reported a second time, and it
// does not mark the store up again. A store call that panics panics in the
// caller's goroutine, as it would without failsafe; once the caller has
// stopped waiting, it crashes the program, as any goroutine's panic does.
//
// A timed-out call may still have been applied: the script may have
// reached Redis and run there, so a request that got the Mode's decision
// may also have been counted by the store. The same holds for a client that
// honours the deadline itself, since the command may already have been
// sent. Counting it can only make later decisions stricter, never allow
// more than the limit. (A Reset that timed out may likewise still happen,
// later, and then forget what was counted in between.) Clients that honour context deadlines (rueidis,
// valkey-go, redigo, go-redis with ContextTimeoutEnabled: true) give up at
// the deadline themselves, so an abandoned call ends at once; with the
// others it holds its connection until the store answers or the client's
// own timeout.
//
// At most MaxInFlight store calls run at once, counting the abandoned ones
// that have not finished yet, so at most MaxInFlight goroutines of
// failsafe's own can be waiting on a hung store. A call that would exceed
// it is not sent: it counts as a store failure ([ErrBusy]). Below that cap,
// the calls abandoned when a store stops answering are those of the callers
// waiting on it at that moment (one per caller); after that the store is
// down and only one probe per RetryInterval is sent.
package failsafe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/bound"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/params"
)

// Mode is what a Limiter does while its store is failing.
type Mode int

const (
	// FailOpen allows every request (Decision.Allowed only; the other
	// fields are zero).
	FailOpen Mode = iota
	// FailClosed denies every request, with RetryAfter = RetryInterval.
	FailClosed
	// FailLocal decides with Config.Local.
	FailLocal
)

// String names the mode: "fail open", "fail closed" or "fall back to
// local".
func (m Mode) String() string {
	switch m {
	case FailOpen:
		return "fail open"
	case FailClosed:
		return "fail closed"
	case FailLocal:
		return "fall back to local"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// DefaultMaxInFlight is Config.MaxInFlight when it is 0.
const DefaultMaxInFlight = 1000

// MaxRetryInterval is the longest Config.RetryInterval: about 71 years,
// the longest duration ratekit's algorithms take.
const MaxRetryInterval = time.Duration(params.MaxSpan) * time.Microsecond

// ErrBusy reports a call that was not sent because MaxInFlight store calls
// were already running (some of them, typically, abandoned after their
// Timeout on a store that does not answer). It comes wrapped together with
// core.ErrStore, and counts as a store failure.
var ErrBusy = errors.New("failsafe: too many store calls in flight")

// Config configures a Limiter.
type Config struct {
	// Limiter is the limiter whose store may fail. Required.
	Limiter core.Limiter
	// Mode applies while the store fails.
	Mode Mode
	// Local decides under FailLocal: typically the same algorithm and
	// configuration on a memory store. Required for FailLocal.
	Local core.Limiter
	// Timeout bounds every call to Limiter, whether or not the client honours
	// context deadlines; 0 means no timeout of our own (the caller's context
	// still bounds the call). A call that times out gets the Mode's
	// decision, and may still be applied by the store (see the package doc).
	Timeout time.Duration
	// MaxInFlight is the most calls to Limiter that may run at once, counting
	// calls abandoned at their timeout that the store has not finished. A
	// call beyond it is not sent and counts as a store failure (ErrBusy).
	// 0 means DefaultMaxInFlight.
	MaxInFlight int
	// RetryInterval is how long the store is left alone after a failure
	// before it is tried again. 0 means 1 s; at most MaxRetryInterval.
	RetryInterval time.Duration
	// OnError receives every store error with the key. It is called from
	// the caller's goroutine and must be safe for concurrent use.
	OnError func(key string, err error)
	// Logger receives the store's state changes: a line at
	// slog.LevelError when the store fails and the Mode starts deciding
	// (with the error and the mode), and one at slog.LevelInfo when a
	// probe gets an answer and decisions come from the store again (with
	// how long it was down). The failures in between (failed probes, calls
	// that failed beside the one that marked the store down) are logged at
	// slog.LevelDebug. So an outage logs two lines at Info and above,
	// however long it lasts. Keys are never logged: the lines carry the
	// store's error, and ratekit's store errors name no key (a limiter of
	// your own must keep to that); OnError gets them. nil
	// means slog.Default(); slog.New(slog.DiscardHandler) logs nothing.
	Logger *slog.Logger
	// Clock is the clock of RetryInterval; nil means the system's.
	Clock core.Clock
}

// Limiter applies a failure mode around a store-backed limiter: it is a
// core.Limiter itself, safe for concurrent use. The zero Limiter, and a
// nil *Limiter, cannot decide: every call returns an error wrapping
// core.ErrInvalidConfig (which no Mode decides), MaxCost returns 0 and
// State reports Up; build one with New.
type Limiter struct {
	cfg   Config
	now   func() time.Time
	calls bound.Calls
	// downUntil is 0 while the store is up. After a failure it is the Unix
	// time in ns before which the store is skipped; after that, the one
	// caller that moves it forward by RetryInterval probes the store, and
	// only a probe that gets an answer sets it back to 0.
	downUntil atomic.Int64
	// downSince is the Unix time in ns at which the store was last marked
	// down, for the line that says it answers again.
	downSince atomic.Int64
	// probes counts the probes running: calls to a store marked down.
	probes atomic.Int64
}

var _ core.Limiter = (*Limiter)(nil)

// errZero is what the calls of a Limiter not built by New return.
var errZero = fmt.Errorf("%w: a zero failsafe.Limiter: build it with failsafe.New", core.ErrInvalidConfig)

// built reports whether New made l (New refuses a nil Limiter).
func (l *Limiter) built() bool { return l != nil && l.cfg.Limiter != nil }

// New checks cfg and returns a Limiter; errors wrap core.ErrInvalidConfig.
func New(cfg Config) (*Limiter, error) {
	if cfg.Limiter == nil || cfg.Limiter.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: failsafe: Limiter is nil or cannot decide (not built by its New)", core.ErrInvalidConfig)
	}
	if cfg.Local != nil && cfg.Local.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: failsafe: Local cannot decide (not built by its New)", core.ErrInvalidConfig)
	}
	switch cfg.Mode {
	case FailOpen, FailClosed:
	case FailLocal:
		if cfg.Local == nil {
			return nil, fmt.Errorf("%w: failsafe: Local is nil with FailLocal", core.ErrInvalidConfig)
		}
	default:
		return nil, fmt.Errorf("%w: failsafe: unknown Mode %d", core.ErrInvalidConfig, int(cfg.Mode))
	}
	if err := params.CheckClock(cfg.Clock); err != nil {
		return nil, fmt.Errorf("failsafe: Clock: %w", err)
	}
	if cfg.Timeout < 0 || cfg.RetryInterval < 0 || cfg.MaxInFlight < 0 {
		return nil, fmt.Errorf("%w: failsafe: Timeout, RetryInterval and MaxInFlight must not be negative", core.ErrInvalidConfig)
	}
	if cfg.RetryInterval > MaxRetryInterval {
		return nil, fmt.Errorf("%w: failsafe: RetryInterval must be at most %v, got %v", core.ErrInvalidConfig, MaxRetryInterval, cfg.RetryInterval)
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = time.Second
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Limiter{cfg: cfg, now: time.Now}
	if cfg.Clock != nil {
		l.now = cfg.Clock.Now
	}
	l.calls = bound.Calls{Timeout: cfg.Timeout, Max: int64(cfg.MaxInFlight), Busy: ErrBusy}
	return l, nil
}

// Unwrap returns the limiter whose store may fail (Config.Limiter), for
// tools that walk a chain of wrapped limiters, such as instrumentation.
func (l *Limiter) Unwrap() core.Limiter {
	if l == nil {
		return nil
	}
	return l.cfg.Limiter
}

// MaxCost returns the wrapped limiter's (core.Limiter): the largest cost
// it accepts, which l refuses beyond while the Mode decides; 0 for a
// Limiter New did not make.
func (l *Limiter) MaxCost() int64 {
	if !l.built() {
		return 0
	}
	return l.cfg.Limiter.MaxCost()
}

// Down reports whether the store is considered down: from a failure until
// a probe of the store gets an answer.
func (l *Limiter) Down() bool {
	return l != nil && l.downUntil.Load() != 0
}

// State is the state of a Limiter's store, as [Limiter.State] reports it.
type State int

const (
	// Up: decisions come from the store.
	Up State = iota
	// Down: the store failed and is left alone; the Mode decides.
	Down
	// Probing: the store is down and one call (more only when Timeout is
	// longer than RetryInterval) is asking it whether it answers again;
	// the other calls get the Mode's decision.
	Probing
)

// String returns "up", "down" or "probing".
func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	case Probing:
		return "probing"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// State reports the store's state now: Up, Down, or Probing while a probe
// of a store marked down is running. Down reports whether it is not Up.
func (l *Limiter) State() State {
	if l == nil || l.downUntil.Load() == 0 {
		return Up
	}
	if l.probes.Load() > 0 {
		return Probing
	}
	return Down
}

// try reports whether this call may ask the store: always while the store
// is up; while it is down, only the one call that claims the next probe.
// probe is the downUntil value the claim stored (0 when the store is up).
func (l *Limiter) try() (ok bool, probe int64) {
	until := l.downUntil.Load()
	if until == 0 {
		return true, 0
	}
	now := l.now().UnixNano()
	if now < until {
		return false, 0
	}
	next := now + int64(l.cfg.RetryInterval) // below 2^63: see MaxRetryInterval
	if !l.downUntil.CompareAndSwap(until, next) {
		return false, 0 // another call claimed this probe
	}
	return true, next
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: 1})
}

// AllowN is Decide for an OpAllow request of cost n on key.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n})
}

// Peek is Decide for an OpPeek request of cost 1 on key.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: 1, Op: core.OpPeek})
}

// Refund is Decide for an OpRefund request of cost n on key.
func (l *Limiter) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n, Op: core.OpRefund})
}

// Decide asks the store, within Timeout; when the store fails (or is
// being skipped after a failure), the Mode decides, with the request's
// Params under FailLocal (Local decides r as it is). Errors that are the
// caller's are returned as they are, never decided by the Mode: a bad
// Op, key or Params (core.ErrInvalidConfig, core.ErrInvalidKey), a bad
// cost (core.ErrInvalidCost: below 1, or above the store's limiter's
// MaxCost or the least Limit of the request's Params), the caller's own
// context ending, a clock out of range (core.ErrInvalidTime), and state
// the limiter did not write (core.ErrCorruptState: the store answered,
// and the key needs a Reset). While the store is skipped, these are
// checked here, as the store's limiter would (callcheck.Request).
//
// A refund (OpRefund) cannot be faked: when the store fails (or is
// skipped), FailLocal refunds Local, and the other modes return the
// store's error, wrapping core.ErrStore.
func (l *Limiter) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if !l.built() {
		return core.Decision{}, errZero
	}
	err := errors.New("failsafe: the store is down")
	if ok, probe := l.try(); ok {
		var d core.Decision
		if d, err = l.ask(ctx, r, probe); err == nil || !l.storeFault(ctx, err) {
			return d, err
		}
		l.fail(ctx, r.Key, err)
	}
	if err := callcheck.Request(ctx, r, l.MaxCost()); err != nil {
		return core.Decision{}, err
	}
	switch {
	case l.cfg.Mode == FailLocal:
		return l.cfg.Local.Decide(ctx, r)
	case r.Op == core.OpRefund:
		if !errors.Is(err, core.ErrStore) {
			err = fmt.Errorf("%w: %w", core.ErrStore, err)
		}
		return core.Decision{}, err
	case l.cfg.Mode == FailClosed:
		return core.Decision{Allowed: false, RetryAfter: l.cfg.RetryInterval}, nil
	}
	return core.Decision{Allowed: true}, nil
}

// Reset resets key on the store (and on Local, if any), within Timeout. A
// store failure is returned: a reset cannot be faked. A Reset that timed
// out may still be applied by the store, later.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if !l.built() {
		return errZero
	}
	if l.cfg.Local != nil {
		if err := l.cfg.Local.Reset(ctx, key); err != nil {
			return err
		}
	}
	_, err := l.calls.Do(ctx, func(cctx context.Context) (core.Decision, error) {
		return core.Decision{}, l.cfg.Limiter.Reset(cctx, key)
	})
	if err != nil && l.storeFault(ctx, err) {
		l.fail(ctx, key, err)
	}
	return err
}

// ask decides r on the store. A probe (probe != 0: the downUntil value
// its claim stored) counts as running until it returns, even if the
// store panics, and marks the store up when it gets an answer.
func (l *Limiter) ask(ctx context.Context, r core.Request, probe int64) (core.Decision, error) {
	call := func(cctx context.Context) (core.Decision, error) { return l.cfg.Limiter.Decide(cctx, r) }
	if probe == 0 {
		return l.calls.Do(ctx, call)
	}
	l.probes.Add(1)
	defer l.probes.Add(-1)
	d, err := l.calls.Do(ctx, call)
	// The store answered: up again, unless a newer failure has been
	// recorded since this probe was claimed.
	if err == nil && l.downUntil.CompareAndSwap(probe, 0) {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "failsafe: the store answers again, decisions come from it",
			slog.Duration("down_for", time.Duration(l.now().UnixNano()-l.downSince.Load())))
	}
	return d, err
}

// storeFault reports whether err is the store's fault rather than the
// caller's: not a bad key, cost, clock or configuration, not state the
// limiter did not write (the store answered), not the caller's own
// context ending.
func (l *Limiter) storeFault(ctx context.Context, err error) bool {
	for _, caller := range callerErrors {
		if errors.Is(err, caller) {
			return false
		}
	}
	return ctx.Err() == nil
}

// callerErrors are the errors AllowN returns as they are.
var callerErrors = []error{core.ErrInvalidKey, core.ErrInvalidCost, core.ErrInvalidTime, core.ErrCorruptState, core.ErrInvalidConfig}

// fail marks the store down for RetryInterval, reports err to OnError, and
// logs the change when the store was up.
func (l *Limiter) fail(ctx context.Context, key string, err error) {
	now := l.now()
	if l.downUntil.Swap(now.Add(l.cfg.RetryInterval).UnixNano()) == 0 {
		l.downSince.Store(now.UnixNano())
		l.cfg.Logger.LogAttrs(ctx, slog.LevelError, "failsafe: the store failed, the mode decides until it answers again",
			slog.Any("error", err), slog.String("mode", l.cfg.Mode.String()), slog.Duration("retry_interval", l.cfg.RetryInterval))
	} else {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "failsafe: the store failed again", slog.Any("error", err))
	}
	if l.cfg.OnError != nil {
		l.cfg.OnError(key, err)
	}
}
