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
// Every store error goes to OnError; none is swallowed silently.
//
// The client must honour context deadlines for the timeout to bound a call:
// rueidis does; go-redis only with ContextTimeoutEnabled: true in its
// options (otherwise it waits for its own ReadTimeout).
package failsafe

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
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

// Config configures a Limiter.
type Config struct {
	// Store is the limiter whose store may fail. Required.
	Store core.Limiter
	// Policy applies while the store fails.
	Policy Policy
	// Local decides under FailLocal: typically the same algorithm and
	// configuration on a memory store. Required for FailLocal.
	Local core.Limiter
	// Timeout bounds every call to Store; 0 means no timeout of our own.
	Timeout time.Duration
	// RetryInterval is how long the store is left alone after a failure
	// before it is tried again. 0 means 1 s.
	RetryInterval time.Duration
	// OnError receives every store error with the key. Optional, but
	// without it failures are only visible in decisions.
	OnError func(key string, err error)
	// Now is the clock for RetryInterval; nil means time.Now.
	Now func() time.Time
}

// Limiter applies a failure policy around a store-backed limiter. It is
// safe for concurrent use.
type Limiter struct {
	cfg Config
	// downUntil is 0 while the store is up. After a failure it is the Unix
	// time in ns before which the store is skipped; after that, the one
	// caller that moves it forward by RetryInterval probes the store, and
	// only a probe that gets an answer sets it back to 0.
	downUntil atomic.Int64
}

var _ core.Limiter = (*Limiter)(nil)

// New checks cfg and returns a Limiter; errors wrap core.ErrInvalidConfig.
func New(cfg Config) (*Limiter, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: failsafe: Store is nil", core.ErrInvalidConfig)
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
	if cfg.Timeout < 0 || cfg.RetryInterval < 0 {
		return nil, fmt.Errorf("%w: failsafe: Timeout and RetryInterval must not be negative", core.ErrInvalidConfig)
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{cfg: cfg}, nil
}

// Down reports whether the store is considered down: from a failure until
// a probe of the store gets an answer.
func (l *Limiter) Down() bool {
	return l.downUntil.Load() != 0
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
	next := now + int64(l.cfg.RetryInterval)
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
// caller's (bad key, bad cost) and the caller's own context ending are
// returned as they are.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.decide(ctx, key, func(lim core.Limiter, ctx context.Context) (core.Decision, error) {
		return lim.AllowN(ctx, key, n)
	})
}

// Peek is like AllowN for Peek.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.decide(ctx, key, func(lim core.Limiter, ctx context.Context) (core.Decision, error) {
		return lim.Peek(ctx, key)
	})
}

// Reset resets key on the store (and on Local, if any). A store failure is
// returned: a reset cannot be faked.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.cfg.Local != nil {
		if err := l.cfg.Local.Reset(ctx, key); err != nil {
			return err
		}
	}
	cctx, cancel := l.withTimeout(ctx)
	defer cancel()
	err := l.cfg.Store.Reset(cctx, key)
	if err != nil && l.storeFault(ctx, err) {
		l.fail(key, err)
	}
	return err
}

func (l *Limiter) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.cfg.Timeout > 0 {
		return context.WithTimeout(ctx, l.cfg.Timeout)
	}
	return ctx, func() {}
}

func (l *Limiter) decide(ctx context.Context, key string, op func(core.Limiter, context.Context) (core.Decision, error)) (core.Decision, error) {
	if ok, probe := l.try(); ok {
		cctx, cancel := l.withTimeout(ctx)
		d, err := op(l.cfg.Store, cctx)
		cancel()
		if err == nil || !l.storeFault(ctx, err) {
			if probe != 0 && err == nil {
				// The store answered: up again, unless a newer failure
				// has been recorded since this probe was claimed.
				l.downUntil.CompareAndSwap(probe, 0)
			}
			return d, err
		}
		l.fail(key, err)
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

// storeFault reports whether err is the store's fault rather than the
// caller's: not a bad key or cost, not the caller's own context ending.
func (l *Limiter) storeFault(ctx context.Context, err error) bool {
	if errors.Is(err, core.ErrInvalidKey) || errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrInvalidTime) {
		return false
	}
	return ctx.Err() == nil
}

func (l *Limiter) fail(key string, err error) {
	l.downUntil.Store(l.cfg.Now().Add(l.cfg.RetryInterval).UnixNano())
	if l.cfg.OnError != nil {
		l.cfg.OnError(key, err)
	}
}
