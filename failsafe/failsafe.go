// Package failsafe decides what a limiter does when its store fails or is
// too slow: fail open (allow), fail closed (deny), or fall back to a local
// limiter (a memory-store limiter with the same configuration: degraded,
// since each process then limits on its own, but still limiting).
//
// Every call to the store gets a timeout. After a failure, the store is left
// alone for RetryInterval, and the policy decides. Then one call (and only
// one, however many are waiting) probes the store while the others go on
// with the policy; once a probe answers, decisions come from the store
// again, and if it fails the store is left alone for another RetryInterval.
// So at most one call per RetryInterval waits on a failing store (more only
// when Timeout is longer than RetryInterval).
// Every store error goes to OnError; none is swallowed silently. The
// store's state changes go to Config.Logger (slog.Default() when nil): one
// line when the store fails and the policy starts deciding, one when it
// answers again, however long the outage and however many calls fail in it.
// [Limiter.State] reports the state (up, down, probing) for metrics.
//
// # Timeouts do not depend on the client
//
// failsafe enforces Timeout (and the caller's own context) itself, whatever
// the client's options: the store call runs in its own goroutine, and the
// caller gets the policy's decision at the deadline even if the client
// ignores its context (go-redis without ContextTimeoutEnabled waits for
// its ReadTimeout, 3 s by default). The abandoned call goes on in the
// background until the client gives up or the store answers; its late
// answer is dropped, never returned, never reported a second time, and it
// does not mark the store up again. A store call that panics panics in the
// caller's goroutine, as it would without failsafe; once the caller has
// stopped waiting, it crashes the program, as any goroutine's panic does.
//
// A timed-out call may still have been applied: the script may have
// reached Redis and run there, so a request that got the policy's decision
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
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/params"
)

// Policy is what a Limiter does while its store is failing.
type Policy int

const (
	// FailOpen allows every request (Decision.Allowed only; the other
	// fields are zero).
	FailOpen Policy = iota
	// FailClosed denies every request, with RetryAfter = RetryInterval.
	FailClosed
	// FailLocal decides with Config.Local.
	FailLocal
)

// String names the policy.
func (p Policy) String() string {
	switch p {
	case FailOpen:
		return "fail open"
	case FailClosed:
		return "fail closed"
	case FailLocal:
		return "fall back to local"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
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
	// Store is the limiter whose store may fail. Required.
	Store core.Limiter
	// Policy applies while the store fails.
	Policy Policy
	// Local decides under FailLocal: typically the same algorithm and
	// configuration on a memory store. Required for FailLocal.
	Local core.Limiter
	// Timeout bounds every call to Store, whether or not the client honours
	// context deadlines; 0 means no timeout of our own (the caller's context
	// still bounds the call). A call that times out gets the policy's
	// decision, and may still be applied by the store (see the package doc).
	Timeout time.Duration
	// MaxInFlight is the most calls to Store that may run at once, counting
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
	// slog.LevelError when the store fails and the policy starts deciding
	// (with the error and the policy), and one at slog.LevelInfo when a
	// probe gets an answer and decisions come from the store again (with
	// how long it was down). The failures in between (failed probes, calls
	// that failed beside the one that marked the store down) are logged at
	// slog.LevelDebug. So an outage logs two lines at Info and above,
	// however long it lasts. Keys are never logged: the lines carry the
	// store's error, and ratekit's store errors name no key (a Store of
	// your own must keep to that); OnError gets them. nil
	// means slog.Default(); slog.New(slog.DiscardHandler) logs nothing.
	Logger *slog.Logger
	// Now is the clock for RetryInterval; nil means time.Now.
	Now func() time.Time
}

// Limiter applies a failure policy around a store-backed limiter. It is
// safe for concurrent use. Build it with New: a zero Limiter, or a nil
// *Limiter, fails every call with an error wrapping core.ErrInvalidConfig
// (which no Policy decides) and reports the store Up.
type Limiter struct {
	cfg Config
	// maxCost is the largest cost Store accepts (callcheck.MaxCost): a
	// larger one is refused while the policy decides, as Store would.
	maxCost int64
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
	// inFlight counts the store calls running, abandoned ones included.
	inFlight atomic.Int64
	// callDone, if set (by tests), runs when a store call run in its own
	// goroutine has finished, just before that goroutine ends.
	callDone func()
}

var _ core.Limiter = (*Limiter)(nil)

// errZero is what the calls of a Limiter not built by New return.
var errZero = fmt.Errorf("%w: a zero failsafe.Limiter: build it with failsafe.New", core.ErrInvalidConfig)

// built reports whether New made l (New refuses a nil Store).
func (l *Limiter) built() bool { return l != nil && l.cfg.Store != nil }

// New checks cfg and returns a Limiter; errors wrap core.ErrInvalidConfig.
func New(cfg Config) (*Limiter, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: failsafe: Store is nil", core.ErrInvalidConfig)
	}
	if why := callcheck.Unusable(cfg.Store); why != "" {
		return nil, fmt.Errorf("%w: failsafe: Store is %s", core.ErrInvalidConfig, why)
	}
	if cfg.Local != nil {
		if why := callcheck.Unusable(cfg.Local); why != "" {
			return nil, fmt.Errorf("%w: failsafe: Local is %s", core.ErrInvalidConfig, why)
		}
	}
	switch cfg.Policy {
	case FailOpen, FailClosed:
	case FailLocal:
		if cfg.Local == nil {
			return nil, fmt.Errorf("%w: failsafe: Local is nil with FailLocal", core.ErrInvalidConfig)
		}
	default:
		return nil, fmt.Errorf("%w: failsafe: unknown Policy %d", core.ErrInvalidConfig, int(cfg.Policy))
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Limiter{cfg: cfg, maxCost: callcheck.MaxCost(cfg.Store)}, nil
}

// Unwrap returns the limiter whose store may fail (Config.Store), for
// tools that walk a chain of wrapped limiters, such as instrumentation.
func (l *Limiter) Unwrap() core.Limiter {
	if l == nil {
		return nil
	}
	return l.cfg.Store
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
	// Down: the store failed and is left alone; the policy decides.
	Down
	// Probing: the store is down and one call (more only when Timeout is
	// longer than RetryInterval) is asking it whether it answers again;
	// the other calls get the policy's decision.
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
	now := l.cfg.Now().UnixNano()
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
	return l.AllowN(ctx, key, 1)
}

// AllowN asks the store, within Timeout; when the store fails (or is being
// skipped after a failure), the policy decides. Errors that are the
// caller's are returned as they are, never decided by the policy: a bad
// key (core.ErrInvalidKey), a bad cost (core.ErrInvalidCost: below 1, or
// above the store's limiter's MaxCost), the caller's own context ending,
// a clock out of range (core.ErrInvalidTime), and state the limiter did
// not write (core.ErrCorruptState: the store answered, and the key needs
// a Reset). While the store is skipped, the first three are checked here,
// as the store's limiter would.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.decide(ctx, key, n, func(lim core.Limiter, ctx context.Context) (core.Decision, error) {
		return lim.AllowN(ctx, key, n)
	})
}

// Peek is like AllowN for Peek.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.decide(ctx, key, 1, func(lim core.Limiter, ctx context.Context) (core.Decision, error) {
		return lim.Peek(ctx, key)
	})
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
	_, err := l.call(ctx, func(cctx context.Context) (core.Decision, error) {
		return core.Decision{}, l.cfg.Store.Reset(cctx, key)
	})
	if err != nil && l.storeFault(ctx, err) {
		l.fail(ctx, key, err)
	}
	return err
}

// decide asks the store for the decision on a call of cost n on key (op
// on Store), or lets the policy decide.
func (l *Limiter) decide(ctx context.Context, key string, n int64, op func(core.Limiter, context.Context) (core.Decision, error)) (core.Decision, error) {
	if !l.built() {
		return core.Decision{}, errZero
	}
	if ok, probe := l.try(); ok {
		d, err := l.ask(ctx, op, probe)
		if err == nil || !l.storeFault(ctx, err) {
			return d, err
		}
		l.fail(ctx, key, err)
	}
	if err := callcheck.Check(ctx, key, n, l.maxCost); err != nil {
		return core.Decision{}, err
	}
	switch l.cfg.Policy {
	case FailClosed:
		return core.Decision{Allowed: false, RetryAfter: l.cfg.RetryInterval}, nil
	case FailLocal:
		return op(l.cfg.Local, ctx)
	default:
		return core.Decision{Allowed: true}, nil
	}
}

// ask runs op against the store. A probe (probe != 0: the downUntil value
// its claim stored) counts as running until it returns, even if op
// panics, and marks the store up when it gets an answer.
func (l *Limiter) ask(ctx context.Context, op func(core.Limiter, context.Context) (core.Decision, error), probe int64) (core.Decision, error) {
	call := func(cctx context.Context) (core.Decision, error) { return op(l.cfg.Store, cctx) }
	if probe == 0 {
		return l.call(ctx, call)
	}
	l.probes.Add(1)
	defer l.probes.Add(-1)
	d, err := l.call(ctx, call)
	// The store answered: up again, unless a newer failure has been
	// recorded since this probe was claimed.
	if err == nil && l.downUntil.CompareAndSwap(probe, 0) {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "failsafe: the store answers again, decisions come from it",
			slog.Duration("down_for", time.Duration(l.cfg.Now().UnixNano()-l.downSince.Load())))
	}
	return d, err
}

// The states of a store call run in its own goroutine.
const (
	running   int32 = iota
	finished        // the result is (being) sent to the waiting caller
	abandoned       // the caller stopped waiting; the result is dropped
)

// result is the outcome of a store call run in its own goroutine.
type result struct {
	d        core.Decision
	err      error
	panicked bool
	panicVal any
}

// call runs op against the store and returns no later than Timeout after
// it starts, or when ctx ends, whatever op does with its context: op runs
// in its own goroutine, which is abandoned at the deadline and finishes in
// the background; its late result is dropped. Without a deadline (no
// Timeout, and a ctx that never ends) op runs in the caller's goroutine.
func (l *Limiter) call(ctx context.Context, op func(context.Context) (core.Decision, error)) (core.Decision, error) {
	if l.inFlight.Add(1) > int64(l.cfg.MaxInFlight) {
		l.inFlight.Add(-1)
		return core.Decision{}, fmt.Errorf("%w: %w: %d calls already running (MaxInFlight)", core.ErrStore, ErrBusy, l.cfg.MaxInFlight)
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if l.cfg.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, l.cfg.Timeout)
	}
	defer cancel()
	if cctx.Done() == nil {
		defer l.inFlight.Add(-1)
		return op(cctx)
	}

	var state atomic.Int32
	done := make(chan result, 1) // buffered: the goroutine never blocks on it
	go func() {
		r := result{panicked: true}
		defer func() {
			if r.panicked {
				r.panicVal = recover()
			}
			l.inFlight.Add(-1)
			if state.CompareAndSwap(running, finished) {
				done <- r
			} else if r.panicked {
				// Nobody waits for this call any more: crash, as any
				// goroutine's panic would, rather than hide it.
				panic(fmt.Sprintf("failsafe: store call panicked after its caller stopped waiting: %v\n%s", r.panicVal, debug.Stack()))
			}
			if l.callDone != nil {
				l.callDone()
			}
		}()
		r.d, r.err = op(cctx)
		r.panicked = false
	}()

	select {
	case r := <-done:
		return r.get()
	case <-cctx.Done():
	}
	if !state.CompareAndSwap(running, abandoned) {
		// The answer came with the deadline: use it.
		r := <-done
		return r.get()
	}
	if err := ctx.Err(); err != nil {
		return core.Decision{}, fmt.Errorf("%w: failsafe: gave up waiting: %w", core.ErrStore, err)
	}
	return core.Decision{}, fmt.Errorf("%w: failsafe: no answer within %v: %w", core.ErrStore, l.cfg.Timeout, context.DeadlineExceeded)
}

// get returns the call's outcome in the caller's goroutine, panicking
// there if the call panicked.
func (r result) get() (core.Decision, error) {
	if r.panicked {
		panic(r.panicVal)
	}
	return r.d, r.err
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
	now := l.cfg.Now()
	if l.downUntil.Swap(now.Add(l.cfg.RetryInterval).UnixNano()) == 0 {
		l.downSince.Store(now.UnixNano())
		l.cfg.Logger.LogAttrs(ctx, slog.LevelError, "failsafe: the store failed, the policy decides until it answers again",
			slog.Any("error", err), slog.String("policy", l.cfg.Policy.String()), slog.Duration("retry_interval", l.cfg.RetryInterval))
	} else {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "failsafe: the store failed again", slog.Any("error", err))
	}
	if l.cfg.OnError != nil {
		l.cfg.OnError(key, err)
	}
}
