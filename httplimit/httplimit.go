package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
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
	// Limiter decides the requests.
	Limiter Limiter
	// Window, when set, is advertised as w= (whole seconds, rounded up).
	Window time.Duration
	// Key, when set, replaces Config.Key for this policy: for example a
	// constant key for a limit shared by all clients.
	Key KeyFunc
}

// KeyFunc returns the key a request is limited by. An error answers 400.
type KeyFunc func(r *http.Request) (string, error)

// Config configures the middleware.
type Config struct {
	// Policies are applied in order; a request must pass all of them. A
	// denial stops the chain: the policies before it have counted the
	// request. At least one is required.
	Policies []Policy
	// Key returns the request's key; nil means ClientIP{}.Key (the remote
	// address, no proxy trusted, IPv6 grouped by /64).
	Key KeyFunc
	// Cost returns a request's cost; nil means 1. An error answers 400.
	Cost func(r *http.Request) (int64, error)
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds from now) for the first policy.
	LegacyHeaders bool
	// Denied, when set, writes the response for a denied request instead
	// of the default 429 body. The status line is the handler's to write;
	// the rate-limit headers and Retry-After are already set, and
	// DecisionFromContext returns the denying decision.
	Denied http.Handler
	// OnError receives every store error (and key or cost errors), with
	// the request.
	OnError func(r *http.Request, err error)
	// FailClosed answers 503 when the store fails; by default the request
	// is served (fail open).
	FailClosed bool
}

type ctxKey struct{}

// DecisionFromContext returns the decision stored in ctx by the middleware
// for a denied request (in Config.Denied) or an allowed one (in the next
// handler): the decision of the last policy applied.
func DecisionFromContext(ctx context.Context) (core.Decision, bool) {
	d, ok := ctx.Value(ctxKey{}).(core.Decision)
	return d, ok
}

// New returns the middleware for cfg, or an error wrapping
// core.ErrInvalidConfig that names the bad field.
func New(cfg Config) (func(http.Handler) http.Handler, error) {
	if len(cfg.Policies) == 0 {
		return nil, fmt.Errorf("%w: httplimit: Policies is empty", core.ErrInvalidConfig)
	}
	names := map[string]bool{}
	for i := range cfg.Policies {
		p := &cfg.Policies[i]
		if p.Limiter == nil {
			return nil, fmt.Errorf("%w: httplimit: Policies[%d].Limiter is nil", core.ErrInvalidConfig, i)
		}
		if p.Name == "" {
			p.Name = "default"
		}
		if err := checkName(p.Name); err != nil {
			return nil, fmt.Errorf("%w: httplimit: Policies[%d].Name: %w", core.ErrInvalidConfig, i, err)
		}
		if names[p.Name] {
			return nil, fmt.Errorf("%w: httplimit: Policies[%d].Name %q is used twice", core.ErrInvalidConfig, i, p.Name)
		}
		names[p.Name] = true
		if p.Window < 0 {
			return nil, fmt.Errorf("%w: httplimit: Policies[%d].Window is negative", core.ErrInvalidConfig, i)
		}
	}
	if cfg.Key == nil {
		cfg.Key = ClientIP{}.Key
	}
	m := &middleware{cfg: cfg}
	return m.wrap, nil
}

func checkName(name string) error {
	if len(name) > 64 {
		return errors.New("longer than 64 bytes")
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("byte %#x is not printable ASCII", name[i])
		}
	}
	return nil
}

type middleware struct {
	cfg Config
}

func (m *middleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(1)
		if m.cfg.Cost != nil {
			var err error
			if n, err = m.cfg.Cost(r); err != nil {
				m.report(r, fmt.Errorf("httplimit: cost: %w", err))
				http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		var policies, states []string
		var last core.Decision
		for i, p := range m.cfg.Policies {
			keyf := m.cfg.Key
			if p.Key != nil {
				keyf = p.Key
			}
			key, err := keyf(r)
			if err != nil {
				m.report(r, fmt.Errorf("httplimit: policy %q: key: %w", p.Name, err))
				http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
				return
			}
			d, err := p.Limiter.AllowN(r.Context(), key, n)
			if err != nil {
				if errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrInvalidKey) {
					m.report(r, fmt.Errorf("httplimit: policy %q: %w", p.Name, err))
					http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
					return
				}
				m.report(r, fmt.Errorf("httplimit: policy %q: %w", p.Name, err))
				if m.cfg.FailClosed {
					http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
					return
				}
				continue // fail open: this policy says nothing
			}
			last = d
			policies = append(policies, policyItem(p, d))
			states = append(states, stateItem(p, d))
			if i == 0 && m.cfg.LegacyHeaders {
				h := w.Header()
				h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
				h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
				h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.ResetAfter), 10))
			}
			if !d.Allowed {
				m.setHeaders(w, policies, states)
				m.deny(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, d)), d)
				return
			}
		}
		m.setHeaders(w, policies, states)
		if len(states) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, last))
		}
		next.ServeHTTP(w, r)
	})
}

func (m *middleware) report(r *http.Request, err error) {
	if m.cfg.OnError != nil {
		m.cfg.OnError(r, err)
	}
}

func (m *middleware) setHeaders(w http.ResponseWriter, policies, states []string) {
	if len(policies) == 0 {
		return
	}
	w.Header().Set("RateLimit-Policy", strings.Join(policies, ", "))
	w.Header().Set("RateLimit", strings.Join(states, ", "))
}

func (m *middleware) deny(w http.ResponseWriter, r *http.Request, d core.Decision) {
	retry := max(ceilSeconds(d.RetryAfter), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
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

// policyItem is one RateLimit-Policy list item: "name";q=limit[;w=window].
func policyItem(p Policy, d core.Decision) string {
	s := sfString(p.Name) + ";q=" + strconv.FormatInt(d.Limit, 10)
	if p.Window > 0 {
		s += ";w=" + strconv.FormatInt(ceilSeconds(p.Window), 10)
	}
	return s
}

// stateItem is one RateLimit list item: "name";r=remaining;t=reset.
func stateItem(p Policy, d core.Decision) string {
	return sfString(p.Name) + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10) + ";t=" + strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
}

// sfString quotes s as a Structured Field string (RFC 8941).
func sfString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
