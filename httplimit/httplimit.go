package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/logpace"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// Limiter is the one method the middleware needs; every ratekit limiter
// has it.
type Limiter interface {
	AllowN(ctx context.Context, key string, n int64) (core.Decision, error)
}

// Policy is one limiter the middleware applies, named in the headers.
type Policy struct {
	// Name is the policy's name in RateLimit-Policy and RateLimit: printable
	// ASCII, at most 64 bytes. Empty means "default".
	Name string
	// Limiter decides the requests. Required: New refuses nil, a nil
	// pointer (a typed nil) included.
	Limiter Limiter
	// Window, when set, is advertised as w= (whole seconds, rounded up),
	// beside q, which is the Limiter's Decision.Limit: it must be the time
	// in which the Limiter gives back its whole Limit, so that q per w is
	// the rate it enforces. For a fixed or sliding window, its Window; for
	// GCRA and the token bucket, whose Limit is the burst (the capacity),
	// the time a burst takes to come back: gcra.Config{Rate: 10, Period:
	// time.Minute, Burst: 2} is q=2 with a Window of 12 s (2 per 12 s is
	// 10 a minute), not a minute, which would advertise 2 a minute. New
	// cannot check it: a Limiter says its Limit only when it decides.
	Window time.Duration
	// Key, when set, replaces Config.Key for this policy: for example a
	// constant key for a limit shared by all clients.
	Key Keyer
}

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
	// Policy decides every request against all of its limits at once, in
	// one call: counted by all of them or by none. Each enforced limit is
	// one item of RateLimit-Policy and RateLimit; shadow limits are in no
	// header (they are not enforced). A 429 names the limits that denied. Exactly one of Policy, PolicyFor and
	// Policies is set.
	Policy PolicyLimiter
	// PolicyFor picks each request's policy (its tier), as Policy.
	PolicyFor PolicyFunc
	// Counts, with Policy or PolicyFor, decides after the handler whether
	// a request counts, by its response status: one that does not is
	// refunded (ratekit.Policy.Refund). For example, to count only errors:
	//
	//	Counts: func(status int) bool { return status >= 400 },
	//
	// A handler that panics before answering counts. The handler's writer
	// still is an http.Flusher and an http.Hijacker (server-sent events,
	// WebSocket); a hijacked connection is seen as 101 Switching
	// Protocols unless a status was written before. nil counts every
	// request.
	Counts func(status int) bool
	// Policies are applied in order; a request must pass all of them. A
	// denial stops the chain: the policies before it have counted the
	// request (use Policy to decide several limits at once).
	Policies []Policy
	// Key returns the request's key; nil means ClientIP{} (the remote
	// address, no proxy trusted, IPv6 grouped by /64). New checks the
	// settings of a ClientIP or HeaderKey given here or in a Policy.
	Key Keyer
	// Cost returns a request's cost; nil means 1. An error answers 400.
	Cost func(r *http.Request) (int64, error)
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds from now, the same value as its t in
	// RateLimit) for the first policy, or the first enforced limit of a
	// Policy.
	LegacyHeaders bool
	// Denied, when set, writes the response for a denied request instead
	// of the default 429 body. The status line is the handler's to write;
	// the rate-limit headers and Retry-After are already set. The denying
	// decision is in the request's context: PolicyDecisionFromContext
	// returns it with Policy or PolicyFor, DecisionFromContext with
	// Policies.
	Denied http.Handler
	// Logger receives the errors the middleware meets, unless OnError is
	// set; nil means slog.Default(). The server's failures (a Limiter's
	// error other than core.ErrInvalidKey and core.ErrInvalidCost, such as
	// a store that is down or refuses the password, a Keyer's error
	// wrapping core.ErrInvalidConfig, and a ClientIP's ErrRemoteNotIP on a
	// listener without IP addresses, paced apart) are logged at
	// slog.LevelError, at
	// most one line every 10 seconds for each middleware New returns, so
	// that a dead store does not flood the log; each line's "suppressed"
	// attribute counts the errors left out since the line before. The
	// client's errors, answered with 400 (a key or cost that cannot be
	// read, or that the limiter refuses), and a store call cut short
	// because the client went away are logged at slog.LevelDebug, every
	// one.
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

// DecisionFromContext returns the decision stored in ctx by a middleware
// with Config.Policies (New) or by Concurrency, for a denied request (in
// Config.Denied) or an allowed one (in the next handler): the decision of
// the last policy applied, or the lease's. With Config.Policy or
// PolicyFor there is none: use PolicyDecisionFromContext.
func DecisionFromContext(ctx context.Context) (core.Decision, bool) {
	d, ok := ctx.Value(ctxKey{}).(core.Decision)
	return d, ok
}

// New returns the middleware for cfg, or an error wrapping
// core.ErrInvalidConfig that names the bad field.
func New(cfg Config) (func(http.Handler) http.Handler, error) {
	return newMiddleware(cfg, time.Now)
}

// newMiddleware is New with the clock that paces log lines.
func newMiddleware(cfg Config, now func() time.Time) (func(http.Handler) http.Handler, error) {
	set := 0
	for _, ok := range []bool{cfg.Policy != nil, cfg.PolicyFor != nil, len(cfg.Policies) > 0} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%w: httplimit: set exactly one of Policy, PolicyFor and Policies (%d are set)", core.ErrInvalidConfig, set)
	}
	if cfg.Policy != nil {
		if why := callcheck.Unusable(cfg.Policy); why != "" {
			return nil, fmt.Errorf("%w: httplimit: Policy is %s", core.ErrInvalidConfig, why)
		}
	}
	if cfg.Counts != nil && len(cfg.Policies) > 0 {
		return nil, fmt.Errorf("%w: httplimit: Counts needs Policy or PolicyFor (a ratekit.Policy refunds)", core.ErrInvalidConfig)
	}
	cfg.Policies = slices.Clone(cfg.Policies)
	names := ratelimitfield.Names{}
	for i := range cfg.Policies {
		p := &cfg.Policies[i]
		if why := callcheck.Unusable(p.Limiter); why != "" {
			return nil, fmt.Errorf("%w: httplimit: Policies[%d].Limiter is %s", core.ErrInvalidConfig, i, why)
		}
		if p.Key != nil {
			k, err := checkKeyer(p.Key)
			if err != nil {
				return nil, fmt.Errorf("%w: httplimit: Policies[%d].Key: %w", core.ErrInvalidConfig, i, err)
			}
			p.Key = k
		}
		if err := names.Check(i, &p.Name, p.Window); err != nil {
			return nil, fmt.Errorf("%w: httplimit: %w", core.ErrInvalidConfig, err)
		}
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

// logEvery is the least time between two lines a middleware logs at
// slog.LevelError.
const logEvery = logpace.Every

type middleware struct {
	cfg Config
	now func() time.Time
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
				m.report(r, slog.LevelDebug, "httplimit: bad request", fmt.Errorf("httplimit: cost: %w", err))
				http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		if m.cfg.Policy != nil || m.cfg.PolicyFor != nil {
			m.servePolicy(w, r, next, n)
			return
		}
		var limits []ratelimitfield.Limit
		var last core.Decision
		for _, p := range m.cfg.Policies {
			keyer := m.cfg.Key
			if p.Key != nil {
				keyer = p.Key
			}
			key, ok := m.key(w, r, keyer, p.Name)
			if !ok {
				return
			}
			d, err := p.Limiter.AllowN(r.Context(), key, n)
			if err != nil {
				if m.failed(w, r, err, p.Name) {
					return
				}
				continue // fail open: this policy says nothing
			}
			last = d
			limits = append(limits, ratelimitfield.Limit{Name: p.Name, Window: p.Window, Decision: d})
			if !d.Allowed {
				retry := ratelimitfield.RetryAfter(d.RetryAfter)
				m.setHeaders(w, limits, retry)
				m.deny(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, d)), retry)
				return
			}
		}
		m.setHeaders(w, limits, 0)
		if len(limits) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, last))
		}
		next.ServeHTTP(w, r)
	})
}

// key returns r's key by keyer, or answers r (400 for the client's error,
// 500 for a misconfigured Keyer) and returns false. name names the policy
// in errors.
func (m *middleware) key(w http.ResponseWriter, r *http.Request, keyer Keyer, name string) (string, bool) {
	key, err := keyer.Key(r)
	if err == nil {
		return key, true
	}
	m.keyFailed(w, r, err, fmt.Sprintf("policy %q", name))
	return "", false
}

// keyFailed reports err, a Keyer's error, and answers r: 500 for the
// server's mistake (a Keyer misconfigured, a ClientIP on a listener
// without IP addresses), 400 for the client's. where names the Keyer's
// user in the error reported.
func (m *middleware) keyFailed(w http.ResponseWriter, r *http.Request, keyErr error, where string) {
	err := fmt.Errorf("httplimit: %s: key: %w", where, keyErr)
	switch {
	case errors.Is(err, core.ErrInvalidConfig):
		m.report(r, slog.LevelError, "httplimit: Keyer misconfigured, request answered 500", err)
	case errors.Is(err, ErrRemoteNotIP):
		// Every request fails alike: one line now and then, on a pacer
		// of its own, so that store failures still get theirs.
		if m.cfg.OnError != nil {
			m.cfg.OnError(r, err)
		} else {
			m.remote.log(m, r, slog.LevelError, "httplimit: ClientIP on a listener without IP addresses (a unix socket?), request answered 500: set Config.Key", slog.Any("error", err))
		}
	default:
		m.report(r, slog.LevelDebug, "httplimit: bad request", err)
		http.Error(w, "bad request: "+keyErr.Error(), http.StatusBadRequest)
		return
	}
	http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
}

// failed reports a limiter's error and answers r when it must: 400 for a
// key or cost the limiter refuses, 503 with FailClosed. It returns false
// when the request is to be served regardless (fail open).
func (m *middleware) failed(w http.ResponseWriter, r *http.Request, err error, name string) bool {
	if errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrInvalidKey) {
		m.report(r, slog.LevelDebug, "httplimit: bad request", fmt.Errorf("httplimit: policy %q: %w", name, err))
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return true
	}
	err = fmt.Errorf("httplimit: policy %q: %w", name, err)
	switch {
	case r.Context().Err() != nil:
		m.report(r, slog.LevelDebug, "httplimit: limiter call cut short, the client went away", err)
	case m.cfg.FailClosed:
		m.report(r, slog.LevelError, "httplimit: limiter failed, request answered 503 (FailClosed)", err)
	default:
		m.report(r, slog.LevelError, "httplimit: limiter failed, request served without this policy (fail open)", err)
	}
	if m.cfg.FailClosed {
		http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
		return true
	}
	return false
}

// report hands err to OnError or, without one, logs msg and err at level:
// at slog.LevelError, at most one line every logEvery.
func (m *middleware) report(r *http.Request, level slog.Level, msg string, err error) {
	if m.cfg.OnError != nil {
		m.cfg.OnError(r, err)
		return
	}
	if level < slog.LevelError {
		if logger := m.logger(); logger.Enabled(r.Context(), level) {
			logger.LogAttrs(r.Context(), level, msg, slog.Any("error", err))
		}
		return
	}
	m.errors.log(m, r, level, msg, slog.Any("error", err))
}

func (m *middleware) logger() *slog.Logger {
	if m.cfg.Logger == nil {
		return slog.Default()
	}
	return m.cfg.Logger
}

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
// RateLimit fields and, with LegacyHeaders, the X-RateLimit headers of the
// first limit, X-RateLimit-Reset being its t.
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
	h.Set("RateLimit-Policy", strings.Join(policies, ", "))
	h.Set("RateLimit", strings.Join(states, ", "))
}

// deny answers a request denied with Retry-After: retry seconds, already
// set.
func (m *middleware) deny(w http.ResponseWriter, r *http.Request, retry int64) {
	if m.cfg.Denied != nil {
		m.cfg.Denied.ServeHTTP(w, r)
		return
	}
	if acceptsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "rate limit exceeded", "retry_after": retry})
		return
	}
	http.Error(w, "rate limit exceeded, retry in "+strconv.FormatInt(retry, 10)+"s", http.StatusTooManyRequests)
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
