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

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
	"github.com/ratekit/ratekit/internal/typednil"
)

// PolicyLimiter is what the middleware needs of a ratekit.Policy:
// *ratekit.Policy has it, and so has otelratekit's Policy, which reports
// its decisions.
type PolicyLimiter interface {
	AllowN(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error)
	Refund(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error)
}

// PolicyFunc picks the policy of a request: its tier (free or paid, an
// override for one customer; for example, one of a ratekit.Tiers). An
// error answers 500 Internal Server Error and is logged as the server's
// failure.
type PolicyFunc func(r *http.Request) (PolicyLimiter, error)

type policyCtxKey struct{}

// PolicyDecisionFromContext returns the policy decision stored in ctx by
// a middleware with Config.Policy or Config.PolicyFor: for a denied
// request (in Config.Denied) or an allowed one (in the next handler).
func PolicyDecisionFromContext(ctx context.Context) (ratekit.PolicyDecision, bool) {
	d, ok := ctx.Value(policyCtxKey{}).(ratekit.PolicyDecision)
	return d, ok
}

// servePolicy decides r against its policy, all limits in one call, and
// serves it or denies it.
func (m *middleware) servePolicy(w http.ResponseWriter, r *http.Request, next http.Handler, n int64) {
	p := m.cfg.Policy
	if m.cfg.PolicyFor != nil {
		var err error
		if p, err = m.cfg.PolicyFor(r); err != nil || typednil.Is(p) {
			if err == nil {
				err = errors.New("PolicyFor returned a nil policy")
			}
			m.report(r, slog.LevelError, "httplimit: PolicyFor failed, request answered 500", fmt.Errorf("httplimit: PolicyFor: %w", err))
			http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
			return
		}
	}
	key, ok := m.key(w, r, m.cfg.Key, "policy")
	if !ok {
		return
	}
	d, err := p.AllowN(r.Context(), key, n)
	if err != nil {
		if m.failed(w, r, err, "policy") {
			return
		}
		next.ServeHTTP(w, r) // fail open
		return
	}
	if len(d.ShadowDenied) > 0 && d.Allowed {
		m.shadow.log(m, r, slog.LevelInfo, "httplimit: shadow limits would have denied the request", slog.Any("limits", d.ShadowDenied))
	}
	var retry int64
	if !d.Allowed {
		retry = ratelimitfield.RetryAfter(d.RetryAfter)
	}
	m.setHeaders(w, ratelimitfield.PolicyLimits(d), retry)
	r = r.WithContext(context.WithValue(r.Context(), policyCtxKey{}, d))
	if !d.Allowed {
		m.denyPolicy(w, r, d, retry)
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
			if _, err := p.Refund(context.WithoutCancel(r.Context()), key, n); err != nil {
				m.report(r, slog.LevelError, "httplimit: refund failed, the request stays counted", fmt.Errorf("httplimit: refund: %w", err))
			}
		}
	}()
	next.ServeHTTP(sw, r)
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
}

// denyPolicy answers a request the policy denied: 429 with Retry-After,
// naming the limits that denied it (or the penalty block).
func (m *middleware) denyPolicy(w http.ResponseWriter, r *http.Request, d ratekit.PolicyDecision, retry int64) {
	if m.cfg.Denied != nil {
		m.cfg.Denied.ServeHTTP(w, r)
		return
	}
	denied := d.Denied
	if denied == nil {
		denied = []string{}
	}
	if acceptsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "rate limit exceeded", "retry_after": retry, "limits": denied, "blocked": d.Blocked})
		return
	}
	why := "limit " + strings.Join(d.Denied, ", ")
	if d.Blocked {
		why = "blocked after exceeding a limit"
		if len(d.Denied) > 0 {
			why += " (" + strings.Join(d.Denied, ", ") + ")"
		}
	}
	http.Error(w, "rate limit exceeded ("+why+"), retry in "+strconv.FormatInt(retry, 10)+"s", http.StatusTooManyRequests)
}

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
