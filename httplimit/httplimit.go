package httplimit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/bound"
	"github.com/ratekit/ratekit/internal/logpace"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// DefaultTimeout is Config.Timeout when it is 0: the longest a decision
// may take before the request is served without it (or answered 503 with
// FailClosed). A Redis round trip takes well under a millisecond; the
// bound is for a store that hangs.
const DefaultTimeout = 100 * time.Millisecond

// maxInFlight is the most decisions of one middleware that may run at
// once, counting those abandoned at their timeout that the store has not
// finished: a call beyond it fails at once, as a store failure.
const maxInFlight = 1000

// Keyer returns the key a request is limited by. An error answers 400 Bad
// Request, except an error wrapping core.ErrInvalidConfig, which is the
// server's fault and answers 500 Internal Server Error.
type Keyer interface {
	Key(r *http.Request) (string, error)
}

// KeyFunc is an adapter that lets an ordinary function be a Keyer: if f
// has the right signature, KeyFunc(f) is a Keyer that calls f.
type KeyFunc func(r *http.Request) (string, error)

// Key returns f(r).
func (f KeyFunc) Key(r *http.Request) (string, error) { return f(r) }

// Config configures the middleware.
type Config struct {
	// Limiter decides every request: any core.Limiter (an algorithm's
	// limiter, a policy of several limits decided at once, a wrapper of
	// one). Exactly one of Limiter and LimiterFor is set.
	Limiter core.Limiter
	// LimiterFor picks each request's limiter: its tier, say (one of a
	// ratekit.Tiers). An error answers 500 Internal Server Error and is
	// logged as the server's failure.
	LimiterFor func(r *http.Request) (core.Limiter, error)
	// Params, when set, returns the limits each request is decided
	// against instead of the limiter's own (core.Request.Params): a
	// customer's contract, say, read from a cache of what a database
	// holds, built with an algorithm package's NewParams. A nil result
	// keeps the limiter's own. The decision, and so the RateLimit fields,
	// report the limits applied; a refund (Counts) gives the same. An
	// error answers 500 Internal Server Error and is logged as the
	// server's failure.
	Params func(r *http.Request) ([]core.Params, error)
	// Name names the limiter's item in RateLimit-Policy and RateLimit:
	// printable ASCII, at most 64 bytes; "default" when empty. A policy's
	// items are named after its limits instead.
	Name string
	// Window, when positive, is advertised as w (whole seconds, rounded
	// up) for a limiter that is not a policy, instead of the Window of its
	// decisions (core.Decision.Window: the time in which it gives back its
	// whole Limit, from its own configuration). A policy's items carry
	// each limit's own Window.
	Window time.Duration
	// Key returns the request's key; nil means ClientIP{} (the remote
	// address, no proxy trusted, IPv6 grouped by /64). New checks the
	// settings of a ClientIP or HeaderKey.
	Key Keyer
	// Cost returns a request's cost; nil means 1. An error answers 400.
	Cost func(r *http.Request) (int64, error)
	// Counts decides after the handler whether a request counts, by its
	// response status: one that does not is refunded (core.Limiter's
	// Refund). For example, to count only errors:
	//
	//	Counts: func(status int) bool { return status >= 400 },
	//
	// A handler that panics before answering counts. The handler's writer
	// still is an http.Flusher and an http.Hijacker (server-sent events,
	// WebSocket); a hijacked connection is seen as 101 Switching
	// Protocols unless a status was written before. nil counts every
	// request.
	Counts func(status int) bool
	// Timeout bounds every decision (and refund), whatever the store's
	// client does with contexts and whether the request's context has a
	// deadline: a store that hangs costs a request at most Timeout, after
	// which the request is served (or answered 503 with FailClosed). 0
	// means DefaultTimeout; it must not be negative. For a limit of its
	// own while the store is down, give a failsafe.Limiter with FailLocal
	// and a shorter Timeout as Limiter.
	Timeout time.Duration
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds from now, the same value as its t in
	// RateLimit) for the first item of the fields.
	LegacyHeaders bool
	// Denied, when set, writes the response for a denied request instead
	// of the default 429 body. The status line is the handler's to write;
	// the rate-limit headers and Retry-After are already set, and
	// DecisionFromContext returns the denying decision.
	Denied http.Handler
	// Logger receives the errors the middleware meets, unless OnError is
	// set; nil means slog.Default(). The server's failures (a Limiter's
	// error other than core.ErrInvalidKey and core.ErrInvalidCost, such as
	// a store that is down, too slow or refuses the password, a Keyer's
	// error wrapping core.ErrInvalidConfig, and a ClientIP's
	// ErrRemoteNotIP on a listener without IP addresses, paced apart) are
	// logged at slog.LevelError, at most one line every 10 seconds for
	// each middleware New returns, so that a dead store does not flood
	// the log; each line's "suppressed" attribute counts the errors left
	// out since the line before. The client's errors, answered with 400
	// (a key or cost that cannot be read, or that the limiter refuses),
	// and a store call cut short because the client went away are logged
	// at slog.LevelDebug, every one. Every line carries the middleware's
	// Name ("limiter", so that stacked middlewares' lines tell apart) and
	// the request's key when it is known ("key"). Clients get a short
	// message of their own, never the error.
	Logger *slog.Logger
	// OnError, when set, receives every error instead of the Logger, with
	// its request, none left out: store errors (which wrap core.ErrStore
	// when they come from a ratekit store), and key and cost errors. It is
	// called from the request's goroutine and must be safe for concurrent
	// use.
	OnError func(r *http.Request, err error)
	// FailClosed answers 503 when the store fails; by default the request
	// is served (fail open).
	FailClosed bool
}

type ctxKey struct{}

// DecisionFromContext returns the decision stored in ctx by the middleware
// (New, or Concurrency for a lease), for a denied request (in
// Config.Denied) or an allowed one (in the next handler). A policy's
// decision holds each of its limits' in Limits.
func DecisionFromContext(ctx context.Context) (core.Decision, bool) {
	d, ok := ctx.Value(ctxKey{}).(core.Decision)
	return d, ok
}

// New returns the middleware for cfg, or an error wrapping
// core.ErrInvalidConfig that names the bad field. To apply limiters of
// different keys (one per client, one for all clients), stack
// middlewares: each adds its items to the fields, and a request must
// pass all of them; an outer one has counted the request when an inner
// one denies it. To decide several limits of one key at once, counted by
// all or by none, give a policy (ratekit.NewPolicy).
func New(cfg Config) (func(http.Handler) http.Handler, error) {
	return newMiddleware(cfg, time.Now)
}

// newMiddleware is New with the clock that paces log lines.
func newMiddleware(cfg Config, now func() time.Time) (func(http.Handler) http.Handler, error) {
	switch {
	case (cfg.Limiter == nil) == (cfg.LimiterFor == nil):
		return nil, fmt.Errorf("%w: httplimit: set exactly one of Limiter and LimiterFor", core.ErrInvalidConfig)
	case cfg.Limiter != nil && cfg.Limiter.MaxCost() < 1:
		return nil, fmt.Errorf("%w: httplimit: Limiter cannot decide (nil, or not built by its New)", core.ErrInvalidConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: httplimit: Timeout is negative", core.ErrInvalidConfig)
	case cfg.Window < 0:
		return nil, fmt.Errorf("%w: httplimit: Window is negative", core.ErrInvalidConfig)
	}
	if cfg.Name == "" {
		cfg.Name = ratelimitfield.DefaultName
	}
	if err := ratelimitfield.CheckName(cfg.Name); err != nil {
		return nil, fmt.Errorf("%w: httplimit: Name: %w", core.ErrInvalidConfig, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Key == nil {
		cfg.Key = ClientIP{}
	}
	k, err := checkKeyer(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: httplimit: Key: %w", core.ErrInvalidConfig, err)
	}
	cfg.Key = k
	m := &middleware{cfg: cfg, now: now}
	m.calls = bound.Calls{Timeout: cfg.Timeout, Max: maxInFlight}
	return m.wrap, nil
}

// checkKeyer returns k checked and ready to use: a ClientIP or HeaderKey
// whose settings are good, or k itself when there is nothing to check.
func checkKeyer(k Keyer) (Keyer, error) {
	var c ClientIP
	switch k := k.(type) {
	case KeyFunc:
		if k == nil {
			return nil, errors.New("a nil KeyFunc")
		}
		return k, nil
	case *ClientIP:
		if k == nil {
			return nil, errors.New("a nil *ClientIP")
		}
		c = *k
	case ClientIP:
		c = k
	case *HeaderKey:
		if k == nil {
			return nil, errors.New("a nil *HeaderKey")
		}
		return checkKeyer(*k)
	case HeaderKey:
		if err := k.check(); err != nil {
			return nil, err
		}
		return k, nil
	default:
		return k, nil
	}
	p, err := c.prepare(true)
	if err != nil {
		return nil, err
	}
	return p, nil
}

type middleware struct {
	cfg   Config
	now   func() time.Time
	calls bound.Calls
	// errors paces the lines logged for the server's failures, shadow
	// those for shadow limits that would have denied, remote those for
	// remote addresses that are not IP addresses.
	errors, shadow, remote pacer
}

func (m *middleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(1)
		if m.cfg.Cost != nil {
			var err error
			if n, err = m.cfg.Cost(r); err != nil {
				m.report(r, "", slog.LevelDebug, "httplimit: bad request", fmt.Errorf("httplimit: cost: %w", err))
				http.Error(w, "bad request: invalid request cost", http.StatusBadRequest)
				return
			}
		}
		lim := m.cfg.Limiter
		if m.cfg.LimiterFor != nil {
			var err error
			if lim, err = m.cfg.LimiterFor(r); err == nil && (lim == nil || lim.MaxCost() < 1) {
				err = errors.New("it returned a limiter that cannot decide (nil, or not built by its New)")
			}
			if err != nil {
				m.report(r, "", slog.LevelError, "httplimit: LimiterFor failed, request answered 500", fmt.Errorf("httplimit: LimiterFor: %w", err))
				http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
				return
			}
		}
		var ps []core.Params
		if m.cfg.Params != nil {
			var err error
			if ps, err = m.cfg.Params(r); err != nil {
				m.report(r, "", slog.LevelError, "httplimit: Params failed, request answered 500", fmt.Errorf("httplimit: Params: %w", err))
				http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
				return
			}
		}
		key, err := m.cfg.Key.Key(r)
		if err != nil {
			m.keyFailed(w, r, err)
			return
		}
		d, err := m.calls.Do(r.Context(), func(ctx context.Context) (core.Decision, error) {
			return lim.Decide(ctx, core.Request{Key: key, N: n, Params: ps})
		})
		if err != nil {
			if !m.failed(w, r, key, err) {
				next.ServeHTTP(w, r) // fail open
			}
			return
		}
		if shadow := d.DeniedBy(true); d.Allowed && shadow != nil {
			m.shadow.log(m, r, slog.LevelInfo, "httplimit: shadow limits would have denied the request", slog.String("key", key), slog.Any("limits", shadow))
		}
		var retry int64
		if !d.Allowed {
			retry = ratelimitfield.RetryAfter(d.RetryAfter)
		}
		m.setHeaders(w, ratelimitfield.Limits(m.cfg.Name, m.cfg.Window, d), retry)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, d))
		if !d.Allowed {
			m.deny(w, r, d, retry)
			return
		}
		if m.cfg.Counts == nil {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			// A handler that panics has not answered: its request counts.
			if sw.status != 0 && !m.cfg.Counts(sw.status) {
				_, err := m.calls.Do(context.WithoutCancel(r.Context()), func(ctx context.Context) (core.Decision, error) {
					return lim.Decide(ctx, core.Request{Key: key, N: n, Op: core.OpRefund, Params: ps})
				})
				if err != nil {
					m.report(r, key, slog.LevelError, "httplimit: refund failed, the request stays counted", fmt.Errorf("httplimit: refund: %w", err))
				}
			}
		}()
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
	})
}

// keyFailed reports err, a Keyer's error, and answers r: 500 for the
// server's mistake (a Keyer misconfigured, a ClientIP on a listener
// without IP addresses), 400 for the client's.
func (m *middleware) keyFailed(w http.ResponseWriter, r *http.Request, keyErr error) {
	err := fmt.Errorf("httplimit: key: %w", keyErr)
	switch {
	case errors.Is(err, core.ErrInvalidConfig):
		m.report(r, "", slog.LevelError, "httplimit: Keyer misconfigured, request answered 500", err)
	case errors.Is(err, ErrRemoteNotIP):
		// Every request fails alike: one line now and then, on a pacer
		// of its own, so that store failures still get theirs.
		if m.cfg.OnError != nil {
			m.cfg.OnError(r, err)
		} else {
			m.remote.log(m, r, slog.LevelError, "httplimit: ClientIP on a listener without IP addresses (a unix socket?), request answered 500: set Config.Key", slog.Any("error", err))
		}
	default:
		m.report(r, "", slog.LevelDebug, "httplimit: bad request", err)
		http.Error(w, "bad request: missing or invalid rate limit key", http.StatusBadRequest)
		return
	}
	http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
}

// failed reports a limiter's error and answers r when it must: 400 for a
// key or cost the limiter refuses, 503 with FailClosed. It returns false
// when the request is to be served regardless (fail open).
func (m *middleware) failed(w http.ResponseWriter, r *http.Request, key string, err error) bool {
	err = fmt.Errorf("httplimit: %w", err)
	switch {
	case errors.Is(err, core.ErrInvalidKey):
		m.report(r, key, slog.LevelDebug, "httplimit: bad request", err)
		http.Error(w, "bad request: invalid rate limit key", http.StatusBadRequest)
		return true
	case errors.Is(err, core.ErrInvalidCost):
		m.report(r, key, slog.LevelDebug, "httplimit: bad request", err)
		http.Error(w, "bad request: invalid request cost", http.StatusBadRequest)
		return true
	case r.Context().Err() != nil:
		m.report(r, key, slog.LevelDebug, "httplimit: limiter call cut short, the client went away", err)
	case m.cfg.FailClosed:
		m.report(r, key, slog.LevelError, "httplimit: limiter failed, request answered 503 (FailClosed)", err)
	default:
		m.report(r, key, slog.LevelError, "httplimit: limiter failed, request served without it (fail open)", err)
	}
	if m.cfg.FailClosed {
		http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
		return true
	}
	return false
}

// report hands err to OnError or, without one, logs msg, the key (when
// known) and err at level: at slog.LevelError, at most one line every
// logEvery.
func (m *middleware) report(r *http.Request, key string, level slog.Level, msg string, err error) {
	if m.cfg.OnError != nil {
		m.cfg.OnError(r, err)
		return
	}
	attrs := []slog.Attr{slog.Any("error", err), slog.String("limiter", m.cfg.Name)}
	if key != "" {
		attrs = append(attrs, slog.String("key", key))
	}
	if level < slog.LevelError {
		if logger := m.logger(); logger.Enabled(r.Context(), level) {
			logger.LogAttrs(r.Context(), level, msg, attrs...)
		}
		return
	}
	m.errors.log(m, r, level, msg, attrs...)
}

func (m *middleware) logger() *slog.Logger {
	if m.cfg.Logger == nil {
		return slog.Default()
	}
	return m.cfg.Logger
}

// logEvery is the least time between two lines a middleware logs at
// slog.LevelError.
const logEvery = logpace.Every

// A pacer logs at most one line every logEvery, each line counting in its
// "suppressed" attribute the lines left out since the one before.
type pacer struct {
	logpace.Pacer
}

func (p *pacer) log(m *middleware, r *http.Request, level slog.Level, msg string, attrs ...slog.Attr) {
	logger := m.logger()
	if !logger.Enabled(r.Context(), level) {
		return
	}
	ok, suppressed := p.Allow(m.now())
	if !ok {
		return
	}
	logger.LogAttrs(r.Context(), level, msg, append(attrs, slog.Int64("suppressed", suppressed))...)
}

// setHeaders sets the rate-limit headers of a response that names limits,
// whose Retry-After is retry seconds (0 when it is not a denial): the
// RateLimit fields, added to any an outer middleware set, and, with
// LegacyHeaders, the X-RateLimit headers of the first limit, X-RateLimit-
// Reset being its t.
func (m *middleware) setHeaders(w http.ResponseWriter, limits []ratelimitfield.Limit, retry int64) {
	h := w.Header()
	if retry > 0 {
		h.Set("Retry-After", strconv.FormatInt(retry, 10))
	}
	if len(limits) == 0 {
		return
	}
	if m.cfg.LegacyHeaders {
		l := limits[0]
		h.Set("X-RateLimit-Limit", strconv.FormatInt(l.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(max(l.Remaining, 0), 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(l.Reset(retry), 10))
	}
	policies, states := ratelimitfield.Fields(limits, retry)
	h.Add(ratelimitfield.PolicyName, strings.Join(policies, ", "))
	h.Add(ratelimitfield.StateName, strings.Join(states, ", "))
}

// deny answers a request denied with d, whose Retry-After (retry
// seconds) is set: 429, naming a policy's limits that denied it (or the
// penalty block).
func (m *middleware) deny(w http.ResponseWriter, r *http.Request, d core.Decision, retry int64) {
	if m.cfg.Denied != nil {
		m.cfg.Denied.ServeHTTP(w, r)
		return
	}
	denied := d.DeniedBy(false)
	if acceptsJSON(r) {
		body := map[string]any{"error": "rate limit exceeded", "retry_after": retry}
		if d.Limits != nil {
			body["limits"], body["blocked"] = append([]string{}, denied...), d.Blocked // [], not null
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	msg := "rate limit exceeded"
	switch {
	case d.Blocked && len(denied) > 0:
		msg += " (blocked after exceeding a limit: " + strings.Join(denied, ", ") + ")"
	case d.Blocked:
		msg += " (blocked after exceeding a limit)"
	case len(denied) > 0:
		msg += " (limit " + strings.Join(denied, ", ") + ")"
	}
	http.Error(w, msg+", retry in "+strconv.FormatInt(retry, 10)+"s", http.StatusTooManyRequests)
}

func acceptsJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "application/json") {
			return true
		}
	}
	return false
}

func ceilSeconds(d time.Duration) int64 { return ratelimitfield.CeilSeconds(d) }

// statusWriter records the status a handler answers with. It keeps what
// the writer underneath can do: a handler may assert http.Flusher (server-
// sent events) and http.Hijacker (WebSocket) on it, and reach the rest
// through http.ResponseController, which Unwraps it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

var (
	_ http.Flusher  = (*statusWriter)(nil)
	_ http.Hijacker = (*statusWriter)(nil)
)

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the writer underneath, which answers 200 if the handler
// has not written a status; it does nothing when that writer cannot
// flush.
func (w *statusWriter) Flush() {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err == nil && w.status == 0 {
		w.status = http.StatusOK
	}
}

// Hijack hands the connection to the handler, or returns an error
// wrapping http.ErrNotSupported when the writer underneath cannot (an
// HTTP/2 stream). What the handler then writes on the connection is not
// seen: Counts gets 101 Switching Protocols, the answer a WebSocket
// upgrade writes, unless a status was written before.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("httplimit: hijack: %w", err)
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, nil
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
