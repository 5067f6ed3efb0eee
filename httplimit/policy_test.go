package httplimit_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
)

func policy(t *testing.T, cfg ratekit.PolicyConfig) *ratekit.Limiter {
	t.Helper()
	p, err := ratekit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A policy's limits are decided at once: every limit is an item of both
// headers, with its own w (its limiter's Window), a 429 names the limit
// that denied, and the limits that allowed the denied request counted
// nothing.
func TestPolicyHeadersAndDenial(t *testing.T) {
	s, clock := memStore(t)
	burst := bucket(t, s, clock, 5)
	daily, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 2, Window: 24 * time.Hour, Clock: clock, Prefix: "http:daily:"})
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: burst}, {Name: "daily", Limiter: daily}}})
	h := mw(t, httplimit.Config{Limiter: p})(ok)
	for i, want := range []string{`"burst";r=4;t=10, "daily";r=1;t=86400`, `"burst";r=3;t=20, "daily";r=0;t=86400`} {
		res := get(t, h, "10.0.0.1:1", nil)
		if res.StatusCode != 200 || res.Header.Get("RateLimit") != want || res.Header.Get("RateLimit-Policy") != `"burst";q=5;w=50, "daily";q=2;w=86400` {
			t.Fatalf("request %d: %d, RateLimit %q, RateLimit-Policy %q", i, res.StatusCode, res.Header.Get("RateLimit"), res.Header.Get("RateLimit-Policy"))
		}
	}
	res := get(t, h, "10.0.0.1:1", map[string]string{"Accept": "application/json"})
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 429 || !strings.Contains(string(body), `"limits":["daily"]`) || res.Header.Get("Retry-After") != "86400" {
		t.Fatalf("third request: %d %s, Retry-After %q", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if d, _ := burst.Peek(t.Context(), "ip4:10.0.0.1"); d.Remaining != 3 {
		t.Fatalf("the burst limit counted the denied request: %d left, want 3", d.Remaining)
	}
	res = get(t, h, "10.0.0.1:1", nil)
	body, _ = io.ReadAll(res.Body)
	if res.StatusCode != 429 || !strings.Contains(string(body), "limit daily") {
		t.Fatalf("plain-text denial: %d %s", res.StatusCode, body)
	}
}

// A shadow policy that would deny still answers 200, without the
// RateLimit headers (a client would throttle itself on a limit that is not
// enforced), and says what it would have done in DecisionFromContext.
func TestShadowPolicyNeverDenies(t *testing.T) {
	s, clock := memStore(t)
	p := policy(t, ratekit.PolicyConfig{Shadow: true, Limits: []ratekit.Limit{{Name: "new-limit", Limiter: bucket(t, s, clock, 1)}}})
	var seen []core.Decision
	h := mw(t, httplimit.Config{Limiter: p})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := httplimit.DecisionFromContext(r.Context())
		seen = append(seen, d)
	}))
	for i := 0; i < 3; i++ {
		res := get(t, h, "10.0.0.1:1", nil)
		if res.StatusCode != 200 || res.Header.Get("RateLimit") != "" || res.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("request %d: %d, RateLimit %q", i, res.StatusCode, res.Header.Get("RateLimit"))
		}
	}
	shadowDenied := func(d core.Decision) (names []string) {
		for _, l := range d.Limits {
			if l.Shadow && !l.Allowed {
				names = append(names, l.Name)
			}
		}
		return names
	}
	if len(seen) != 3 || len(shadowDenied(seen[0])) != 0 || strings.Join(shadowDenied(seen[2]), ",") != "new-limit" || !seen[2].Allowed {
		t.Fatalf("decisions: %+v", seen)
	}
}

// Counts refunds the requests that do not count: here only responses with
// status >= 400 count, so successes never use up the limit.
func TestCountsRefundsByStatus(t *testing.T) {
	s, clock := memStore(t)
	failures, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 2, Window: time.Hour, Clock: clock, Prefix: "http:fail:"})
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "failures", Limiter: failures}}})
	status := 200
	h := mw(t, httplimit.Config{Limiter: p, Counts: func(code int) bool { return code >= 400 }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	for i := 0; i < 5; i++ {
		if res := get(t, h, "10.0.0.1:1", nil); res.StatusCode != 200 {
			t.Fatalf("success %d answered %d", i, res.StatusCode)
		}
	}
	status = 401
	for i := 0; i < 2; i++ {
		if res := get(t, h, "10.0.0.1:1", nil); res.StatusCode != 401 {
			t.Fatalf("failure %d answered %d", i, res.StatusCode)
		}
	}
	if res := get(t, h, "10.0.0.1:1", nil); res.StatusCode != 429 {
		t.Fatalf("after two failures: %d, want 429", res.StatusCode)
	}
	// A handler that writes a body without a status line answered 200.
	implicit := mw(t, httplimit.Config{Limiter: p, Counts: func(code int) bool { return code >= 400 }})(ok)
	if d, _ := failures.Peek(t.Context(), "ip4:10.0.0.2"); d.Remaining != 2 {
		t.Fatalf("fresh key: %+v", d)
	}
	get(t, implicit, "10.0.0.2:1", nil)
	if d, _ := failures.Peek(t.Context(), "ip4:10.0.0.2"); d.Remaining != 2 {
		t.Fatalf("an implicit 200 was counted: %+v", d)
	}
}

// LimiterFor picks each request's tier; an error from it answers 500.
func TestLimiterFor(t *testing.T) {
	s, clock := memStore(t)
	prefix := "http:tier:"
	tier := func(limit int64) *ratekit.Limiter {
		l, _ := fixedwindow.New(s, fixedwindow.Config{Limit: limit, Window: time.Hour, Clock: clock, Prefix: prefix})
		return policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "hourly", Limiter: l}}})
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"free": tier(1), "paid": tier(100)})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(t, httplimit.Config{LimiterFor: func(r *http.Request) (core.Limiter, error) {
		p, err := tiers.Policy(r.Header.Get("X-Plan"))
		if err != nil {
			return nil, err
		}
		return p, nil
	}, Logger: slog.New(slog.DiscardHandler)})(ok)
	free, paid := map[string]string{"X-Plan": "free"}, map[string]string{"X-Plan": "paid"}
	if res := get(t, h, "10.0.0.1:1", free); res.StatusCode != 200 {
		t.Fatalf("free 1: %d", res.StatusCode)
	}
	if res := get(t, h, "10.0.0.1:1", free); res.StatusCode != 429 {
		t.Fatalf("free 2: %d", res.StatusCode)
	}
	if res := get(t, h, "10.0.0.1:1", paid); res.StatusCode != 200 || res.Header.Get("RateLimit") != `"hourly";r=98;t=3600` {
		t.Fatalf("paid: %d %q", res.StatusCode, res.Header.Get("RateLimit"))
	}
	res := get(t, h, "10.0.0.1:1", map[string]string{"X-Plan": "gold"})
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || strings.Contains(string(body), "gold") || strings.Contains(string(body), "tier") {
		t.Fatalf("unknown tier: %d %q; want 500 with a message of the middleware's own", res.StatusCode, body)
	}
	// A limiter that cannot decide, from LimiterFor, is the server's
	// mistake too.
	zero := mw(t, httplimit.Config{LimiterFor: func(*http.Request) (core.Limiter, error) { return &ratekit.Limiter{}, nil }, Logger: slog.New(slog.DiscardHandler)})(ok)
	if res := get(t, zero, "10.0.0.1:1", nil); res.StatusCode != 500 {
		t.Fatalf("a zero limiter from LimiterFor: %d", res.StatusCode)
	}
}

// Limiter and LimiterFor exclude each other.
func TestLimiterConfigErrors(t *testing.T) {
	s, clock := memStore(t)
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "x", Limiter: bucket(t, s, clock, 1)}}})
	pf := func(*http.Request) (core.Limiter, error) { return p, nil }
	for name, cfg := range map[string]httplimit.Config{
		"none":            {},
		"limiter and for": {Limiter: p, LimiterFor: pf},
	} {
		if _, err := httplimit.New(cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

// Counts refunds through any limiter (core.Limiter's Refund), not only a
// policy: here a token bucket on its own.
func TestCountsRefundsAnyLimiter(t *testing.T) {
	s, clock := memStore(t)
	b := bucket(t, s, clock, 2)
	status := 200
	h := mw(t, httplimit.Config{Limiter: b, Counts: func(code int) bool { return code >= 400 }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	for i := 0; i < 5; i++ {
		if res := get(t, h, "10.0.0.1:1", nil); res.StatusCode != 200 {
			t.Fatalf("success %d answered %d", i, res.StatusCode)
		}
	}
	if d, _ := b.Peek(t.Context(), "ip4:10.0.0.1"); d.Remaining != 2 {
		t.Fatalf("successes counted: %+v", d)
	}
	status = 500
	get(t, h, "10.0.0.1:1", nil)
	if d, _ := b.Peek(t.Context(), "ip4:10.0.0.1"); d.Remaining != 1 {
		t.Fatalf("a failure did not count: %+v", d)
	}
}

// A penalty block answers 429 saying so, with the block's Retry-After.
func TestPolicyPenalty(t *testing.T) {
	s, clock := memStore(t)
	p := policy(t, ratekit.PolicyConfig{PenaltyPrefix: "http:penalty:", Limits: []ratekit.Limit{{Name: "rate", Limiter: bucket(t, s, clock, 1), Penalty: 5 * time.Minute}}})
	h := mw(t, httplimit.Config{Limiter: p})(ok)
	get(t, h, "10.0.0.1:1", nil)
	res := get(t, h, "10.0.0.1:1", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "300" || !strings.Contains(string(body), "blocked") {
		t.Fatalf("exceeded: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	clock.Advance(time.Minute)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.0.0.1:1"
	h.ServeHTTP(rec, req)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "240" {
		t.Fatalf("a minute later: %d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// On a denial every t of RateLimit is at most Retry-After, and the limit
// that denied says exactly Retry-After: draft-ietf-httpapi-ratelimit-
// headers-10 has "the Retry-After field value SHOULD NOT reference a point
// in time earlier than the reset parameter". Before, t was the time until
// the limiter was full again: t=20 (burst) and t=86400 (daily) beside
// Retry-After: 10.
func TestPolicyDenialResetIsRetryAfter(t *testing.T) {
	s, clock := memStore(t)
	burst := bucket(t, s, clock, 2) // one back every 10 s
	daily, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 100, Window: 24 * time.Hour, Clock: clock, Prefix: "http:daily2:"})
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: burst}, {Name: "daily", Limiter: daily}}})
	h := mw(t, httplimit.Config{Limiter: p, LegacyHeaders: true})(ok)
	get(t, h, "10.0.0.1:1", nil)
	res := get(t, h, "10.0.0.1:1", nil)
	if got, want := res.Header.Get("RateLimit"), `"burst";r=0;t=20, "daily";r=98;t=86400`; res.StatusCode != 200 || got != want {
		t.Fatalf("second request: %d, RateLimit %q, want %q", res.StatusCode, got, want)
	}
	res = get(t, h, "10.0.0.1:1", nil)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "10" {
		t.Fatalf("third request: %d, Retry-After %q, want 429 and 10", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if got, want := res.Header.Get("RateLimit"), `"burst";r=0;t=10, "daily";r=98;t=10`; got != want {
		t.Errorf("denial: RateLimit %q, want %q", got, want)
	}
	if got := res.Header.Get("X-RateLimit-Reset"); got != "10" {
		t.Errorf("denial: X-RateLimit-Reset %q, want 10 (t of the first limit)", got)
	}
}

// A shadow limit is in no header a client reads, not even the legacy ones
// when it comes first: a client would throttle itself on a limit that is
// not enforced, which defeats a shadow rollout.
func TestShadowLimitIsNotAdvertised(t *testing.T) {
	s, clock := memStore(t)
	trial := bucket(t, s, clock, 1)
	enforced := bucket(t, s, clock, 50)
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "trial", Limiter: trial, Shadow: true}, {Name: "api", Limiter: enforced}}})
	h := mw(t, httplimit.Config{Limiter: p, LegacyHeaders: true})(ok)
	for i := 0; i < 3; i++ {
		res := get(t, h, "10.0.0.1:1", nil)
		hdr := res.Header
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
		for k, want := range map[string]string{
			"RateLimit-Policy":      `"api";q=50;w=500`,
			"RateLimit":             fmt.Sprintf(`"api";r=%d;t=%d`, 49-i, 10*(i+1)),
			"X-RateLimit-Limit":     "50",
			"X-RateLimit-Remaining": fmt.Sprint(49 - i),
		} {
			if got := hdr.Get(k); got != want {
				t.Errorf("request %d: %s %q, want %q", i, k, got, want)
			}
		}
	}
}

// With Counts the handler's writer still flushes (server-sent events) and
// hijacks (WebSocket): before, it was a wrapper with neither method, so
// w.(http.Flusher) and w.(http.Hijacker) failed.
func TestCountsKeepsFlusherAndHijacker(t *testing.T) {
	s, clock := memStore(t)
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "api", Limiter: bucket(t, s, clock, 5)}}})
	counted := make(chan int, 3) // the server's goroutine calls Counts
	cfg := httplimit.Config{Limiter: p, Counts: func(code int) bool { counted <- code; return true }}

	// Flush reaches the recorder underneath, and is an implicit 200.
	flushed := mw(t, cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("the handler's writer is not an http.Flusher")
			return
		}
		f.Flush()
	}))
	rec := httptest.NewRecorder()
	flushed.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if !rec.Flushed || rec.Code != 200 {
		t.Errorf("Flush: recorder Flushed %v, code %d; want true, 200", rec.Flushed, rec.Code)
	}

	// Hijack on a real connection; Counts sees 101.
	hijacked := mw(t, cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("the handler's writer is not an http.Hijacker")
			return
		}
		conn, rw, err := hj.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		rw.Flush()
	}))
	srv := httptest.NewServer(hijacked)
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "hijacked" {
		t.Errorf("hijacked response %q, want hijacked", body)
	}
	if got := []int{<-counted, <-counted}; got[0] != 200 || got[1] != 101 {
		t.Errorf("Counts saw %v, want [200 101]", got)
	}

	// A writer that cannot hijack: an error wrapping http.ErrNotSupported.
	var hjErr error
	unsupported := mw(t, cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hj, ok := w.(http.Hijacker); ok {
			_, _, hjErr = hj.Hijack()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	unsupported.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !errors.Is(hjErr, http.ErrNotSupported) {
		t.Errorf("Hijack on a recorder: %v, want an error wrapping http.ErrNotSupported", hjErr)
	}
	if got := <-counted; got != 204 {
		t.Errorf("Counts saw %d, want 204", got)
	}
}

// In Config.Denied the denying decision is in the request's context
// (DecisionFromContext), a policy's with each limit's in Limits.
func TestDeniedSeesTheDecision(t *testing.T) {
	s, clock := memStore(t)
	var got []core.Decision
	denied := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := httplimit.DecisionFromContext(r.Context())
		if !ok {
			t.Error("Denied found no decision")
		}
		got = append(got, d)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "api", Limiter: bucket(t, s, clock, 1)}}})
	h := mw(t, httplimit.Config{Limiter: p, Denied: denied})(ok)
	get(t, h, "10.0.0.1:1", nil)
	get(t, h, "10.0.0.1:1", nil)
	h = mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 1), Denied: denied})(ok)
	get(t, h, "10.0.0.2:1", nil)
	get(t, h, "10.0.0.2:1", nil)
	if len(got) != 2 || got[0].Allowed || len(got[0].Limits) != 1 || got[0].Limits[0].Name != "api" || got[1].Allowed || got[1].Limits != nil {
		t.Errorf("Denied saw %+v; want the policy's denial with its limit, then the limiter's", got)
	}
}
