package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
)

// ConcurrencyLimiter is what the Concurrency middleware needs; a
// *concurrency.Limiter has it. Limit is 0 for a limiter that cannot
// decide (nil, or not built by its New), which Concurrency refuses.
type ConcurrencyLimiter interface {
	AcquireN(ctx context.Context, key string, n int64) (concurrency.Lease, core.Decision, error)
	Release(ctx context.Context, lease concurrency.Lease) (bool, error)
	Extend(ctx context.Context, lease concurrency.Lease) (bool, error)
	Limit() int64
}

var _ ConcurrencyLimiter = (*concurrency.Limiter)(nil)

// ConcurrencyConfig configures the Concurrency middleware.
type ConcurrencyConfig struct {
	// Limiter hands out the leases. Required: Concurrency refuses nil, a
	// nil pointer (a typed nil) included.
	Limiter ConcurrencyLimiter
	// Key returns the request's key, as Config.Key; nil means ClientIP{}.
	Key Keyer
	// Cost returns a request's cost, the slots its lease takes; nil
	// means 1. An error answers 400.
	Cost func(r *http.Request) (int64, error)
	// Status is the status of a request refused because its key is full:
	// http.StatusTooManyRequests (the default, when 0) or
	// http.StatusServiceUnavailable.
	Status int
	// Denied, when set, writes the response for a refused request instead
	// of the default body. Retry-After is already set, and
	// DecisionFromContext returns the denying decision.
	Denied http.Handler
	// ExtendEvery, when positive, extends the lease at this interval
	// while the handler runs and its client is connected, for handlers
	// that may outlast the lease's TTL: a third of the TTL is a good
	// choice. Once the client has gone away the lease is no longer
	// extended, so a handler that keeps working after that holds its slot
	// until it returns or the TTL runs out. Zero never extends: a handler
	// that outlasts the TTL loses its slot to the next request.
	ExtendEvery time.Duration
	// ReleaseTimeout bounds the release sent when the handler returns;
	// 0 means 5 seconds. The release does not use the request's context,
	// which has ended when the client went away, so the slot is freed
	// then too.
	ReleaseTimeout time.Duration
	// Logger, OnError and FailClosed are as in Config. A lease that had
	// expired before its handler returned (the handler outlasted the TTL)
	// is reported at slog.LevelWarn.
	Logger     *slog.Logger
	OnError    func(r *http.Request, err error)
	FailClosed bool
}

type leaseKey struct{}

// LeaseFromContext returns the lease the Concurrency middleware holds for
// the request, for a handler that extends it itself.
func LeaseFromContext(ctx context.Context) (concurrency.Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(concurrency.Lease)
	return l, ok
}

// Concurrency returns middleware that caps the requests in flight per key:
// each request acquires a lease of its cost before the handler runs and
// releases it when the handler returns or panics (the panic then goes on),
// including when its client has gone away. A request whose key is full
// gets cfg.Status (429 by default) with Retry-After: the seconds, rounded
// up and never 0, until enough leases expire, an upper bound since a
// release frees a slot sooner. When the store fails the request is served
// without a lease, or answered 503 with FailClosed. Wrap it inside New's
// middleware to apply rate limits first:
// rate(concurrent(handler)).
//
// An error wraps core.ErrInvalidConfig and names the bad field.
func Concurrency(cfg ConcurrencyConfig) (func(http.Handler) http.Handler, error) {
	return newConcurrency(cfg, time.Now)
}

func newConcurrency(cfg ConcurrencyConfig, now func() time.Time) (func(http.Handler) http.Handler, error) {
	if cfg.Limiter == nil || cfg.Limiter.Limit() < 1 {
		return nil, fmt.Errorf("%w: httplimit: ConcurrencyConfig.Limiter is nil or cannot decide (not built by its New)", core.ErrInvalidConfig)
	}
	switch cfg.Status {
	case 0:
		cfg.Status = http.StatusTooManyRequests
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		return nil, fmt.Errorf("%w: httplimit: ConcurrencyConfig.Status must be 429 or 503, got %d", core.ErrInvalidConfig, cfg.Status)
	}
	if cfg.ExtendEvery < 0 {
		return nil, fmt.Errorf("%w: httplimit: ConcurrencyConfig.ExtendEvery is negative", core.ErrInvalidConfig)
	}
	switch {
	case cfg.ReleaseTimeout < 0:
		return nil, fmt.Errorf("%w: httplimit: ConcurrencyConfig.ReleaseTimeout is negative", core.ErrInvalidConfig)
	case cfg.ReleaseTimeout == 0:
		cfg.ReleaseTimeout = 5 * time.Second
	}
	if cfg.Key == nil {
		cfg.Key = ClientIP{}
	}
	k, err := checkKeyer(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: httplimit: ConcurrencyConfig.Key: %w", core.ErrInvalidConfig, err)
	}
	cfg.Key = k
	c := &concurrent{cfg: cfg, log: &middleware{cfg: Config{Logger: cfg.Logger, OnError: cfg.OnError}, now: now}}
	return c.wrap, nil
}

type concurrent struct {
	cfg ConcurrencyConfig
	// log reports errors as New's middleware does.
	log *middleware
}

func (c *concurrent) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(1)
		if c.cfg.Cost != nil {
			var err error
			if n, err = c.cfg.Cost(r); err != nil {
				c.log.report(r, "", slog.LevelDebug, "httplimit: bad request", fmt.Errorf("httplimit: concurrency: cost: %w", err))
				http.Error(w, "bad request: invalid request cost", http.StatusBadRequest)
				return
			}
		}
		key, err := c.cfg.Key.Key(r)
		if err != nil {
			c.log.keyFailed(w, r, fmt.Errorf("concurrency: %w", err))
			return
		}
		lease, d, err := c.cfg.Limiter.AcquireN(r.Context(), key, n)
		if err != nil {
			if errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrInvalidKey) {
				c.log.report(r, key, slog.LevelDebug, "httplimit: bad request", fmt.Errorf("httplimit: concurrency: %w", err))
				http.Error(w, "bad request: invalid rate limit key or request cost", http.StatusBadRequest)
				return
			}
			err = fmt.Errorf("httplimit: concurrency: %w", err)
			switch {
			case r.Context().Err() != nil:
				c.log.report(r, key, slog.LevelDebug, "httplimit: limiter call cut short, the client went away", err)
			case c.cfg.FailClosed:
				c.log.report(r, key, slog.LevelError, "httplimit: concurrency limiter failed, request answered 503 (FailClosed)", err)
			default:
				c.log.report(r, key, slog.LevelError, "httplimit: concurrency limiter failed, request served without a lease (fail open)", err)
			}
			if c.cfg.FailClosed {
				http.Error(w, "concurrency limiter unavailable", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if !d.Allowed {
			c.deny(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, d)), d)
			return
		}
		stop := c.keepAlive(r, lease)
		defer c.release(r, lease, stop)
		next.ServeHTTP(w, r.WithContext(context.WithValue(context.WithValue(r.Context(), ctxKey{}, d), leaseKey{}, lease)))
	})
}

// keepAlive extends lease every ExtendEvery until the returned function is
// called or the client goes away; the function returns once the
// extensions have stopped.
func (c *concurrent) keepAlive(r *http.Request, lease concurrency.Lease) func() {
	if c.cfg.ExtendEvery <= 0 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(c.cfg.ExtendEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				ok, err := c.cfg.Limiter.Extend(r.Context(), lease)
				switch {
				case err != nil && r.Context().Err() == nil:
					c.log.report(r, lease.Key, slog.LevelError, "httplimit: concurrency limiter failed to extend a lease", fmt.Errorf("httplimit: concurrency: extend: %w", err))
				case err == nil && !ok:
					c.log.report(r, lease.Key, slog.LevelWarn, "httplimit: lease expired while its handler ran", fmt.Errorf("httplimit: concurrency: the lease on %q expired before it was extended: ExtendEvery is too long for the TTL", lease.Key))
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// release stops the extensions and releases lease, with a context of its
// own: the request's may have ended with its client. It runs deferred, so
// also while a panic of the handler unwinds, which then goes on.
func (c *concurrent) release(r *http.Request, lease concurrency.Lease, stop func()) {
	stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), c.cfg.ReleaseTimeout)
	defer cancel()
	ok, err := c.cfg.Limiter.Release(ctx, lease)
	switch {
	case err != nil:
		c.log.report(r, lease.Key, slog.LevelError, "httplimit: concurrency limiter failed to release a lease; it frees itself at its TTL", fmt.Errorf("httplimit: concurrency: release: %w", err))
	case !ok:
		c.log.report(r, lease.Key, slog.LevelWarn, "httplimit: lease expired before its handler returned", fmt.Errorf("httplimit: concurrency: the lease on %q expired before its handler returned: raise the TTL or set ExtendEvery", lease.Key))
	}
}

func (c *concurrent) deny(w http.ResponseWriter, r *http.Request, d core.Decision) {
	retry := max(ceilSeconds(d.RetryAfter), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
	if c.cfg.Denied != nil {
		c.cfg.Denied.ServeHTTP(w, r)
		return
	}
	if acceptsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c.cfg.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "too many requests in flight", "retry_after": retry})
		return
	}
	http.Error(w, "too many requests in flight, retry in "+strconv.FormatInt(retry, 10)+"s", c.cfg.Status)
}
