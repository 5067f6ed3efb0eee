package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func memStore(t *testing.T) (*memory.Store, *fakeclock.Clock) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

func bucket(t *testing.T, r core.ScriptRunner, clock core.Clock, capacity int64) *ratekit.Limiter {
	l, err := tokenbucket.New(r, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: 10 * time.Second, Clock: clock, Prefix: fmt.Sprintf("http:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// decideTimeout is the Timeout mw gives a Config without one: the tests
// that are not about Timeout must not see its outcome (fail open, or 503)
// because a saturated machine took longer than DefaultTimeout (100 ms) to
// decide. TestTimeoutBoundsADecision builds its own.
const decideTimeout = 10 * time.Second

// mw builds the middleware, with Timeout decideTimeout when cfg has none.
func mw(t *testing.T, cfg httplimit.Config) func(http.Handler) http.Handler {
	if cfg.Timeout == 0 {
		cfg.Timeout = decideTimeout
	}
	m, err := httplimit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func get(t *testing.T, h http.Handler, remote string, hdr map[string]string) *http.Response {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = remote
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// A real server, the memory store, and the headers of the draft.
func TestHeadersOverHTTP(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{
		Name: "api", Limiter: bucket(t, s, clock, 3), Window: 30 * time.Second,
		LegacyHeaders: true,
	})(ok)
	srv := httptest.NewServer(h)
	defer srv.Close()
	var last *http.Response
	for i := 0; i < 4; i++ {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		last = resp
		if i < 3 {
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %s", i, resp.Status)
			}
			want := fmt.Sprintf(`"api";r=%d;t=%d`, 2-i, 10*(i+1))
			if got := resp.Header.Get("RateLimit"); got != want {
				t.Fatalf("request %d: RateLimit %q, want %q", i, got, want)
			}
		}
	}
	h2 := last.Header
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th request: %s", last.Status)
	}
	// On the denial t is when quota for the request is back, as
	// Retry-After says, not when the bucket is full (30 s): the draft's t
	// is "the number of seconds until additional quota ... is made
	// available", and Retry-After "SHOULD NOT reference a point in time
	// earlier than" it.
	for k, want := range map[string]string{
		"RateLimit-Policy":      `"api";q=3;w=30`,
		"RateLimit":             `"api";r=0;t=10`,
		"Retry-After":           "10",
		"X-RateLimit-Limit":     "3",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "10",
	} {
		if got := h2.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

func TestRetryAfterRoundsUpAndIsNeverZero(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 1)})(ok)
	get(t, h, "10.0.0.1:1", nil)
	clock.Advance(9*time.Second + 999*time.Millisecond) // 1 ms left
	resp := get(t, h, "10.0.0.1:1", nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("%s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	clock.Advance(-8 * time.Second) // 8.001 s left
	if got := get(t, h, "10.0.0.1:1", nil).Header.Get("Retry-After"); got != "9" {
		t.Fatalf("Retry-After %q, want 9", got)
	}
	// w is the limiter's Window: a bucket of 1 refilled every 10 s.
	if got := get(t, h, "10.0.0.1:1", nil).Header.Get("RateLimit-Policy"); got != `"default";q=1;w=10` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
}

func TestDeniedBodies(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 1)})(ok)
	get(t, h, "10.0.0.1:1", nil)
	text := get(t, h, "10.0.0.1:1", nil)
	body, _ := io.ReadAll(text.Body)
	if !strings.HasPrefix(text.Header.Get("Content-Type"), "text/plain") || !strings.Contains(string(body), "rate limit exceeded") {
		t.Fatalf("text body: %q %q", text.Header.Get("Content-Type"), body)
	}
	js := get(t, h, "10.0.0.1:1", map[string]string{"Accept": "application/json"})
	var v struct {
		Error      string `json:"error"`
		RetryAfter int    `json:"retry_after"`
	}
	if err := json.NewDecoder(js.Body).Decode(&v); err != nil || v.Error == "" || v.RetryAfter != 10 || js.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON body: %+v, %v", v, err)
	}
	custom := mw(t, httplimit.Config{
		Limiter: bucket(t, s, clock, 1),
		Denied: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, _ := httplimit.DecisionFromContext(r.Context())
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprintf(w, "wait %v", d.RetryAfter)
		}),
	})(ok)
	get(t, custom, "10.0.0.1:1", nil)
	resp := get(t, custom, "10.0.0.1:1", nil)
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(body) != "wait 10s" || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("custom denial: %s %q", resp.Status, body)
	}
}

// fields returns every value of a response's header named name, as one
// list: what stacked middlewares added, outer first.
func fields(h http.Header, name string) string { return strings.Join(h.Values(name), ", ") }

// Limiters of different keys are stacked middlewares: each adds its item
// to the fields, each with its w (the limiter's Window), and a request
// must pass all of them.
func TestStackedMiddlewaresAndCost(t *testing.T) {
	s, clock := memStore(t)
	perIP := bucket(t, s, clock, 10)
	global, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 4, Window: time.Minute, Clock: clock})
	cost := func(r *http.Request) (int64, error) {
		if r.URL.Query().Get("heavy") != "" {
			return 3, nil
		}
		return 1, nil
	}
	h := mw(t, httplimit.Config{Name: "ip", Limiter: perIP, Cost: cost})(
		mw(t, httplimit.Config{Name: "global", Limiter: global, Cost: cost, Key: httplimit.KeyFunc(func(*http.Request) (string, error) { return "all", nil })})(ok))
	resp := get(t, h, "10.0.0.1:1", nil)
	if got := fields(resp.Header, "RateLimit-Policy"); got != `"ip";q=10;w=100, "global";q=4;w=60` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
	if got := fields(resp.Header, "RateLimit"); got != `"ip";r=9;t=10, "global";r=3;t=60` {
		t.Fatalf("RateLimit %q", got)
	}
	req := httptest.NewRequest("GET", "/?heavy=1", nil)
	req.RemoteAddr = "10.0.0.2:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := fields(rec.Header(), "RateLimit"); rec.Code != 200 || got != `"ip";r=7;t=30, "global";r=0;t=60` {
		t.Fatalf("heavy request: %d %q", rec.Code, got)
	}
	if resp := get(t, h, "10.0.0.3:1", nil); resp.StatusCode != 429 {
		t.Fatalf("global limit not applied: %s", resp.Status)
	}
}

// Per-route limiters: each route wraps its own.
func TestPerRoute(t *testing.T) {
	s, clock := memStore(t)
	mux := http.NewServeMux()
	mux.Handle("/login", mw(t, httplimit.Config{Name: "login", Limiter: bucket(t, s, clock, 1)})(ok))
	mux.Handle("/api", mw(t, httplimit.Config{Name: "api", Limiter: bucket(t, s, clock, 5)})(ok))
	do := func(path string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "10.0.0.1:1"
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code
	}
	if do("/login") != 200 || do("/login") != 429 || do("/api") != 200 || do("/api") != 200 {
		t.Fatal("routes share a limiter")
	}
}

// failing is a limiter whose every call fails with err.
type failing struct{ err error }

func (f failing) Allow(context.Context, string) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failing) AllowN(context.Context, string, int64) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failing) Peek(context.Context, string) (core.Decision, error) { return core.Decision{}, f.err }
func (f failing) Refund(context.Context, string, int64) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failing) Decide(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failing) Reset(context.Context, string) error { return f.err }
func (f failing) MaxCost() int64                      { return math.MaxInt64 }

func TestStoreErrors(t *testing.T) {
	storeErr := fmt.Errorf("%w: connection refused", core.ErrStore)
	var reported []error
	open := mw(t, httplimit.Config{
		Limiter: failing{storeErr},
		OnError: func(_ *http.Request, err error) { reported = append(reported, err) },
	})(ok)
	resp := get(t, open, "10.0.0.1:1", nil)
	if resp.StatusCode != 200 || len(reported) != 1 || !errors.Is(reported[0], core.ErrStore) {
		t.Fatalf("fail open: %s, reported %v", resp.Status, reported)
	}
	closed := mw(t, httplimit.Config{Limiter: failing{storeErr}, FailClosed: true, Logger: slog.New(&recorder{})})(ok)
	if resp := get(t, closed, "10.0.0.1:1", nil); resp.StatusCode != 503 {
		t.Fatalf("fail closed: %s", resp.Status)
	}
	// A cost the limiter can never allow is the client's fault: 400.
	s, clock := memStore(t)
	big := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 2), Cost: func(*http.Request) (int64, error) { return 5, nil }})(ok)
	if resp := get(t, big, "10.0.0.1:1", nil); resp.StatusCode != 400 {
		t.Fatalf("cost above capacity: %s", resp.Status)
	}
}

func TestConfigErrors(t *testing.T) {
	s, clock := memStore(t)
	l := bucket(t, s, clock, 1)
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		name string
		cfg  httplimit.Config
		want string // in the error: the field at fault
	}{
		{"no limiter", httplimit.Config{}, "exactly one of Limiter and LimiterFor"},
		{"no limiter, a name", httplimit.Config{Name: "a"}, "exactly one of Limiter and LimiterFor"},
		{"both", httplimit.Config{Limiter: l, LimiterFor: func(*http.Request) (core.Limiter, error) { return l, nil }}, "exactly one of Limiter and LimiterFor"},
		// A typed nil passed New and panicked at the first request.
		{"typed-nil limiter", httplimit.Config{Limiter: (*ratekit.Limiter)(nil)}, "Limiter cannot decide"},
		{"zero limiter", httplimit.Config{Limiter: &ratekit.Limiter{}}, "Limiter cannot decide"},
		{"bad name", httplimit.Config{Name: "a\nb", Limiter: l}, "Name"},
		{"long name", httplimit.Config{Name: strings.Repeat("n", 65), Limiter: l}, "Name"},
		{"negative window", httplimit.Config{Limiter: l, Window: -time.Second}, "Window"},
		{"negative timeout", httplimit.Config{Limiter: l, Timeout: -time.Second}, "Timeout"},
		{"IPv6Prefix 129", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{IPv6Prefix: 129}}, "Key: ClientIP.IPv6Prefix"},
		{"IPv6Prefix -1", httplimit.Config{Limiter: l, Key: &httplimit.ClientIP{IPv6Prefix: -1}}, "Key: ClientIP.IPv6Prefix"},
		{"proxies without a header", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{TrustedProxies: ten}}, "Key: ClientIP.Header"},
		{"a header without proxies", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{Header: httplimit.XForwardedFor}}, "Key: ClientIP.Header"},
		{"an unknown header", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{TrustedProxies: ten, Header: "X-Client-IP"}}, "Key: ClientIP.Header"},
		{"a zero prefix", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{TrustedProxies: []netip.Prefix{ten[0], {}}, Header: httplimit.XForwardedFor}}, "Key: ClientIP.TrustedProxies[1]"},
		{"an IPv4-mapped prefix", httplimit.Config{Limiter: l, Key: httplimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}, Header: httplimit.XForwardedFor}}, "Key: ClientIP.TrustedProxies[0]"},
		{"a nil *ClientIP", httplimit.Config{Limiter: l, Key: (*httplimit.ClientIP)(nil)}, "Key: a nil *ClientIP"},
		{"a nil KeyFunc", httplimit.Config{Limiter: l, Key: httplimit.KeyFunc(nil)}, "Key: a nil KeyFunc"},
	} {
		_, err := httplimit.New(tt.cfg)
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("%s: %v; want ErrInvalidConfig naming %s", tt.name, err, tt.want)
		}
	}
	for name, key := range map[string]httplimit.Keyer{
		"zero ClientIP":      httplimit.ClientIP{},
		"ClientIP pointer":   &httplimit.ClientIP{TrustedProxies: ten, Header: httplimit.XRealIP, IPv6Prefix: 128},
		"header in any case": httplimit.ClientIP{TrustedProxies: ten, Header: "forwarded"},
		"Header":             httplimit.Header("X-API-Key"),
	} {
		if _, err := httplimit.New(httplimit.Config{Limiter: l, Key: key}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// New keeps its own copy of what it is given: changing the caller's slices
// afterwards changes nothing, and New writes nothing into them.
func TestNewCopiesConfig(t *testing.T) {
	s, clock := memStore(t)
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	ip := &httplimit.ClientIP{TrustedProxies: proxies, Header: httplimit.XForwardedFor}
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 5), Key: ip})(ok)
	proxies[0] = netip.MustParsePrefix("192.0.2.0/24")
	ip.Header = httplimit.Forwarded
	resp := get(t, h, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "198.51.100.9"})
	if got := resp.Header.Get("RateLimit"); got != `"default";r=4;t=10` {
		t.Fatalf("RateLimit %q", got)
	}
	// The client keyed by X-Forwarded-For through 10.0.0.0/8, as configured
	// at New, has used one of its 5: another client has all 5.
	resp = get(t, h, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "198.51.100.10"})
	if got := resp.Header.Get("RateLimit"); got != `"default";r=4;t=10` {
		t.Fatalf("another client: RateLimit %q", got)
	}
	resp = get(t, h, "10.0.0.1:1", map[string]string{"X-Forwarded-For": "198.51.100.9"})
	if got := resp.Header.Get("RateLimit"); got != `"default";r=3;t=20` {
		t.Fatalf("the first client again: RateLimit %q", got)
	}
}

// A Keyer that reports a configuration error is the server's fault: 500,
// logged as an error, not 400.
func TestMisconfiguredKeyer(t *testing.T) {
	s, clock := memStore(t)
	rec := &recorder{}
	wrapped := httplimit.KeyFunc(func(r *http.Request) (string, error) {
		return httplimit.ClientIP{IPv6Prefix: 200}.Key(r) // New cannot see inside
	})
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 5), Key: wrapped, Logger: slog.New(rec)})(ok)
	if resp := get(t, h, "10.0.0.1:1", nil); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("%s; want 500", resp.Status)
	}
	if got := rec.levels(); fmt.Sprint(got) != "[ERROR]" {
		t.Fatalf("logged %v; want one error", got)
	}
}

// recorder is a slog.Handler that keeps the records it is given, at
// level and above.
type recorder struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler           { panic("unused") }
func (h *recorder) WithGroup(string) slog.Handler                { panic("unused") }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *recorder) records() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

func (h *recorder) levels() []slog.Level {
	var ls []slog.Level
	for _, r := range h.records() {
		ls = append(ls, r.Level)
	}
	return ls
}

// attr returns the value of r's attribute key.
func attr(r slog.Record, key string) (v slog.Value) {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// A store error with no OnError is logged at error level, with the error;
// a second one at the same time is not.
func TestStoreErrorsAreLogged(t *testing.T) {
	storeErr := fmt.Errorf("%w: WRONGPASS invalid username-password pair", core.ErrStore)
	for _, failClosed := range []bool{false, true} {
		rec := &recorder{level: slog.LevelDebug}
		h := mw(t, httplimit.Config{Name: "api", Limiter: failing{storeErr}, Logger: slog.New(rec), FailClosed: failClosed})(ok)
		want := map[bool]int{false: 200, true: 503}[failClosed]
		for range 2 {
			if resp := get(t, h, "10.0.0.1:1", nil); resp.StatusCode != want {
				t.Fatalf("FailClosed %v: %s", failClosed, resp.Status)
			}
		}
		recs := rec.records()
		if len(recs) != 1 || recs[0].Level != slog.LevelError {
			t.Fatalf("FailClosed %v: logged %v; want one error", failClosed, rec.levels())
		}
		err, _ := attr(recs[0], "error").Any().(error)
		if !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "WRONGPASS") || attr(recs[0], "key").String() != "ip4:10.0.0.1" {
			t.Errorf("FailClosed %v: error attribute %v, key %v; want the store's error and the request's key", failClosed, err, attr(recs[0], "key"))
		}
		if !strings.Contains(recs[0].Message, map[bool]string{false: "fail open", true: "503"}[failClosed]) {
			t.Errorf("FailClosed %v: message %q does not say what became of the request", failClosed, recs[0].Message)
		}
	}
}

// The log of a dead store: one line, then none until LogEvery has passed,
// then one line counting the errors left out.
func TestStoreErrorLogIsRateLimited(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recorder{}
	m, err := httplimit.NewWithClock(httplimit.Config{
		Limiter: failing{core.ErrStore},
		Logger:  slog.New(rec),
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := m(ok)
	fail := func(n int) {
		t.Helper()
		for range n {
			if resp := get(t, h, "10.0.0.1:1", nil); resp.StatusCode != 200 {
				t.Fatalf("fail open: %s", resp.Status)
			}
		}
	}
	suppressed := func() []int64 {
		var s []int64
		for _, r := range rec.records() {
			s = append(s, attr(r, "suppressed").Int64())
		}
		return s
	}
	fail(5)
	if got := fmt.Sprint(suppressed()); got != "[0]" {
		t.Fatalf("after 5 errors at once: lines with suppressed=%s; want [0]", got)
	}
	clock.Advance(httplimit.LogEvery - time.Nanosecond)
	fail(3)
	if got := fmt.Sprint(suppressed()); got != "[0]" {
		t.Fatalf("just before LogEvery: %s; want [0]", got)
	}
	clock.Advance(time.Nanosecond)
	fail(2)
	if got := fmt.Sprint(suppressed()); got != "[0 7]" {
		t.Fatalf("at LogEvery: %s; want [0 7]", got)
	}
	clock.Advance(time.Hour)
	fail(1)
	if got := fmt.Sprint(suppressed()); got != "[0 7 1]" {
		t.Fatalf("an hour on: %s; want [0 7 1]", got)
	}
}

// Under concurrent failures every error is either logged or counted once.
func TestStoreErrorLogCountsConcurrently(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recorder{}
	m, err := httplimit.NewWithClock(httplimit.Config{
		Limiter: failing{core.ErrStore},
		Logger:  slog.New(rec),
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := m(ok)
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				get(t, h, "10.0.0.1:1", nil)
			}
		})
	}
	wg.Wait()
	clock.Advance(httplimit.LogEvery)
	get(t, h, "10.0.0.1:1", nil)
	recs := rec.records()
	if len(recs) != 2 {
		t.Fatalf("%d lines; want 2", len(recs))
	}
	if got := attr(recs[1], "suppressed").Int64(); got != goroutines*each-1 {
		t.Fatalf("suppressed=%d; want %d", got, goroutines*each-1)
	}
}

// The client's errors are logged at debug level, each one; a client that
// went away is not a store failure.
func TestClientErrorsAreLoggedAtDebug(t *testing.T) {
	s, clock := memStore(t)
	rec := &recorder{level: slog.LevelDebug}
	h := mw(t, httplimit.Config{
		Limiter: bucket(t, s, clock, 2),
		Key:     httplimit.Header("X-API-Key"),
		Cost: func(r *http.Request) (int64, error) {
			return strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		},
		Logger: slog.New(rec),
	})(ok)
	for _, c := range []struct{ url, apiKey string }{
		{"/?n=1", ""},  // no key
		{"/?n=x", "k"}, // a cost that cannot be read
		{"/?n=3", "k"}, // a cost above the limit
	} {
		req := httptest.NewRequest("GET", c.url, nil)
		if c.apiKey != "" {
			req.Header.Set("X-API-Key", c.apiKey)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 400 {
			t.Fatalf("%s %q: %d; want 400", c.url, c.apiKey, w.Code)
		}
	}
	if got := fmt.Sprint(rec.levels()); got != "[DEBUG DEBUG DEBUG]" {
		t.Fatalf("logged %s; want three debug lines", got)
	}

	rec = &recorder{level: slog.LevelDebug}
	gone := mw(t, httplimit.Config{Limiter: failing{context.Canceled}, Logger: slog.New(rec)})(ok)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	gone.ServeHTTP(httptest.NewRecorder(), req)
	if got := fmt.Sprint(rec.levels()); got != "[DEBUG]" {
		t.Fatalf("client gone: logged %s; want one debug line", got)
	}
}

// OnError replaces the Logger; a nil Logger is slog.Default().
func TestOnErrorReplacesLogger(t *testing.T) {
	rec := &recorder{level: slog.LevelDebug}
	var got []error
	h := mw(t, httplimit.Config{
		Limiter: failing{core.ErrStore},
		Logger:  slog.New(rec),
		OnError: func(_ *http.Request, err error) { got = append(got, err) },
	})(ok)
	get(t, h, "10.0.0.1:1", nil)
	get(t, h, "10.0.0.1:1", nil)
	if len(got) != 2 || len(rec.records()) != 0 {
		t.Fatalf("OnError got %v, the Logger %d lines; want 2 and 0", got, len(rec.records()))
	}

	def := &recorder{}
	old := slog.Default()
	slog.SetDefault(slog.New(def))
	t.Cleanup(func() { slog.SetDefault(old) })
	h = mw(t, httplimit.Config{Limiter: failing{core.ErrStore}})(ok)
	get(t, h, "10.0.0.1:1", nil)
	if len(def.records()) != 1 {
		t.Fatalf("slog.Default() got %d lines; want 1", len(def.records()))
	}
}

var trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

// request returns a GET from remote with the given header lines, each
// header's lines in order.
func request(remote string, hdr map[string][]string) *http.Request {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = remote
	for k, lines := range hdr {
		for _, v := range lines {
			req.Header.Add(k, v)
		}
	}
	return req
}

func TestClientIP(t *testing.T) {
	xff := httplimit.ClientIP{TrustedProxies: trusted, Header: httplimit.XForwardedFor}
	for _, tt := range []struct {
		name   string
		key    httplimit.ClientIP
		remote string
		hdr    map[string][]string
		want   string
	}{
		{"plain v4", httplimit.ClientIP{}, "203.0.113.7:5555", nil, "ip4:203.0.113.7"},
		{"no proxy trusted: headers ignored", httplimit.ClientIP{}, "203.0.113.7:5555", map[string][]string{"X-Forwarded-For": {"1.2.3.4"}, "Forwarded": {"for=1.2.3.4"}, "X-Real-IP": {"1.2.3.4"}}, "ip4:203.0.113.7"},
		{"v6 grouped by /64", httplimit.ClientIP{}, "[2001:db8:aa:bb:1:2:3:4]:80", nil, "ip6:2001:db8:aa:bb::/64"},
		{"v6 other address, same /64", httplimit.ClientIP{}, "[2001:db8:aa:bb:ffff::1]:80", nil, "ip6:2001:db8:aa:bb::/64"},
		{"v6 /48", httplimit.ClientIP{IPv6Prefix: 48}, "[2001:db8:aa:bb::1]:80", nil, "ip6:2001:db8:aa::/48"},
		{"v6 whole address", httplimit.ClientIP{IPv6Prefix: 128}, "[2001:db8::1]:80", nil, "ip6:2001:db8::1/128"},
		{"v6 with a zone", httplimit.ClientIP{IPv6Prefix: 128}, "[fe80::1%eth0]:80", nil, "ip6:fe80::1/128"},
		{"v4-mapped v6", httplimit.ClientIP{}, "[::ffff:192.0.2.1]:80", nil, "ip4:192.0.2.1"},
		{"trusted v6 proxy", httplimit.ClientIP{TrustedProxies: trusted, Header: httplimit.Forwarded}, "[fd00::1]:443", map[string][]string{"Forwarded": {`for="[2001:db8:1:2::5]:4711";proto=https`}}, "ip6:2001:db8:1:2::/64"},
		{"header name in any case", httplimit.ClientIP{TrustedProxies: trusted, Header: "x-forwarded-for"}, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"198.51.100.9"}}, "ip4:198.51.100.9"},
		{"XFF: port", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"198.51.100.9:1234"}}, "ip4:198.51.100.9"},
		{"XFF: bracketed v6 and port", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:80"}}, "ip6:2001:db8::/64"},
		{"XFF: bare v6", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"2001:db8::1"}}, "ip6:2001:db8::/64"},
		{"XFF: garbage hop keeps the proxy's view", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"evil, 10.3.3.3"}}, "ip4:10.3.3.3"},
		{"XFF: unknown stops", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"198.51.100.9, unknown"}}, "ip4:10.1.1.1"},
		{"XFF: bracketed v4 is garbage", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"[198.51.100.9]"}}, "ip4:10.1.1.1"},
		{"XFF: empty elements count for nothing", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"198.51.100.9,, 10.3.3.3,"}}, "ip4:198.51.100.9"},
		{"XFF: lines are read in order, the last line last", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"198.51.100.9", "203.0.113.50"}}, "ip4:203.0.113.50"},
		{"XFF: every hop trusted", xff, "10.1.1.1:80", map[string][]string{"X-Forwarded-For": {"10.5.5.5, 10.3.3.3"}}, "ip4:10.5.5.5"},
		{"XFF: absent", xff, "10.1.1.1:80", nil, "ip4:10.1.1.1"},
	} {
		got, err := tt.key.Key(request(tt.remote, tt.hdr))
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := (httplimit.ClientIP{}).Key(request("nonsense", nil)); err == nil || errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("bad remote address: %v", err)
	}
	if _, err := (httplimit.ClientIP{IPv6Prefix: 129}).Key(request("10.0.0.1:1", nil)); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("IPv6Prefix 129: %v", err)
	}
}

// The Forwarded header's syntax (RFC 7239): quoted nodes, IPv6 in
// brackets, ports and obfuscated ports, and nodes that name no address.
func TestClientIPForwarded(t *testing.T) {
	key := httplimit.ClientIP{TrustedProxies: trusted, Header: httplimit.Forwarded}
	const proxy = "ip4:10.0.0.1"
	for _, tt := range []struct {
		fwd  []string
		want string
	}{
		{[]string{`for="[2001:db8:cafe::17]:4711"`}, "ip6:2001:db8:cafe::/64"},
		{[]string{`for="[2001:db8:cafe::17]"`}, "ip6:2001:db8:cafe::/64"},
		{[]string{`for="[2001:db8:cafe::17]:_port-1"`}, "ip6:2001:db8:cafe::/64"},
		{[]string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, "ip4:192.0.2.60"},
		{[]string{`proto=http; FOR="192.0.2.60:_abc"`}, "ip4:192.0.2.60"},
		{[]string{`for="[::ffff:192.0.2.60]"`}, "ip4:192.0.2.60"},
		{[]string{`for=192.0.2.60, for=10.0.0.5`}, "ip4:192.0.2.60"},
		{[]string{`for=192.0.2.60`, `for=10.0.0.5`}, "ip4:192.0.2.60"},
		{[]string{`for=10.0.0.5`, `for=192.0.2.60`}, "ip4:192.0.2.60"},
		{[]string{`for=192.0.2.60, , for=10.0.0.5,`}, "ip4:192.0.2.60"},
		// Obfuscated, unknown and malformed nodes stop the walk: the client
		// is the last address read.
		{[]string{`for=_hidden`}, proxy},
		{[]string{`for=unknown`}, proxy},
		{[]string{`for=192.0.2.60, for=_hidden`}, proxy},
		{[]string{`for=192.0.2.60, for=unknown, for=10.0.0.5`}, "ip4:10.0.0.5"},
		{[]string{`for=2001:db8::1`}, proxy},
		{[]string{`for="[192.0.2.60]"`}, proxy},
		{[]string{`for="[2001:db8::1"`}, proxy},
		{[]string{`for="[2001:db8::1]:123456"`}, proxy},
		{[]string{`for="[2001:db8::1]x"`}, proxy},
		{[]string{`for=192.0.2.60:`}, proxy},
		{[]string{`for=192.0.2.60;for=192.0.2.61`}, proxy},
		{[]string{`for=192.0.2.60;garbage`}, proxy},
		{[]string{`for="192.0.2.60`}, proxy},
		{[]string{`for="192.0.\2.60"`}, proxy},
		{[]string{`proto=https`}, proxy},
		{[]string{`for=`}, proxy},
		// A client's unbalanced quote cannot swallow the element its proxy
		// appends on the same line.
		{[]string{`for=", for=192.0.2.60`}, "ip4:192.0.2.60"},
	} {
		got, err := key.Key(request("10.0.0.1:1", map[string][]string{"Forwarded": tt.fwd}))
		if err != nil || got != tt.want {
			t.Errorf("Forwarded %q: %q, %v; want %q", tt.fwd, got, err, tt.want)
		}
	}
}

// For each header a ClientIP can read, a client cannot choose its key: not
// by sending another header, not by writing hops of its own before the
// proxies', not through a chain of proxies, not by connecting directly.
func TestClientIPSpoofing(t *testing.T) {
	const client, fake = "198.51.100.9", "1.2.3.4"
	const want = "ip4:" + client
	fakes := map[string][]string{"X-Forwarded-For": {fake}, "Forwarded": {"for=" + fake}, "X-Real-IP": {fake}}
	// with returns the client's fake headers, except h, which has lines.
	with := func(h string, lines ...string) map[string][]string {
		m := map[string][]string{}
		for k, v := range fakes {
			if k != h {
				m[k] = v
			}
		}
		m[h] = lines
		return m
	}
	for _, tt := range []struct {
		name   string
		header httplimit.ProxyHeader
		remote string
		hdr    map[string][]string
		want   string
	}{
		{"one proxy", httplimit.XForwardedFor, "10.0.0.1:1", map[string][]string{"X-Forwarded-For": {client}}, want},
		{"client sends the other headers", httplimit.XForwardedFor, "10.0.0.1:1", with("X-Forwarded-For", client), want},
		{"client sends only the other headers", httplimit.XForwardedFor, "10.0.0.1:1", with("X-Forwarded-For"), "ip4:10.0.0.1"},
		{"client prepends hops", httplimit.XForwardedFor, "10.0.0.1:1", with("X-Forwarded-For", fake+", 10.9.9.9, "+client), want},
		{"client prepends a line", httplimit.XForwardedFor, "10.0.0.1:1", with("X-Forwarded-For", fake+", 10.9.9.9", client), want},
		{"two trusted proxies", httplimit.XForwardedFor, "10.0.0.2:1", with("X-Forwarded-For", fake+", "+client+", 10.0.0.1"), want},
		{"two trusted proxies, a line each", httplimit.XForwardedFor, "10.0.0.2:1", with("X-Forwarded-For", fake+", "+client, "10.0.0.1"), want},
		{"untrusted remote", httplimit.XForwardedFor, "203.0.113.7:1", with("X-Forwarded-For", fake), "ip4:203.0.113.7"},

		{"one proxy", httplimit.Forwarded, "10.0.0.1:1", map[string][]string{"Forwarded": {"for=" + client + ";proto=https"}}, want},
		{"client sends the other headers", httplimit.Forwarded, "10.0.0.1:1", with("Forwarded", "for="+client), want},
		{"client sends only the other headers", httplimit.Forwarded, "10.0.0.1:1", with("Forwarded"), "ip4:10.0.0.1"},
		{"client prepends hops", httplimit.Forwarded, "10.0.0.1:1", with("Forwarded", "for="+fake+", for=10.9.9.9, for="+client), want},
		{"client prepends a line", httplimit.Forwarded, "10.0.0.1:1", with("Forwarded", "for="+fake+", for=10.9.9.9", "for="+client), want},
		{"two trusted proxies", httplimit.Forwarded, "10.0.0.2:1", with("Forwarded", "for="+fake+", for="+client+";proto=https, for=10.0.0.1;by=10.0.0.2"), want},
		{"two trusted proxies, a line each", httplimit.Forwarded, "10.0.0.2:1", with("Forwarded", "for="+fake+", for="+client, "for=10.0.0.1"), want},
		{"untrusted remote", httplimit.Forwarded, "203.0.113.7:1", with("Forwarded", "for="+fake), "ip4:203.0.113.7"},

		{"one proxy", httplimit.XRealIP, "10.0.0.1:1", map[string][]string{"X-Real-IP": {client}}, want},
		{"client sends the other headers", httplimit.XRealIP, "10.0.0.1:1", with("X-Real-IP", client), want},
		{"client sends only the other headers", httplimit.XRealIP, "10.0.0.1:1", with("X-Real-IP"), "ip4:10.0.0.1"},
		{"client's line before the proxy's", httplimit.XRealIP, "10.0.0.1:1", with("X-Real-IP", fake, client), want},
		{"client's list", httplimit.XRealIP, "10.0.0.1:1", with("X-Real-IP", fake+", "+client), "ip4:10.0.0.1"},
		{"two trusted proxies passing the client on", httplimit.XRealIP, "10.0.0.2:1", with("X-Real-IP", client), want},
		{"untrusted remote", httplimit.XRealIP, "203.0.113.7:1", with("X-Real-IP", fake), "ip4:203.0.113.7"},
	} {
		key := httplimit.ClientIP{TrustedProxies: trusted, Header: tt.header}
		got, err := key.Key(request(tt.remote, tt.hdr))
		if err != nil || got != tt.want {
			t.Errorf("%s: %s: %q, %v; want %q", tt.header, tt.name, got, err, tt.want)
		}
	}
}

// End to end, for each header: once the client has used its limit, no
// header it sends gets it another request.
func TestClientIPSpoofDoesNotEscape(t *testing.T) {
	for _, tt := range []struct {
		header httplimit.ProxyHeader
		legit  string
		spoofs []map[string]string
	}{
		{httplimit.XForwardedFor, "198.51.100.9", []map[string]string{
			{"X-Forwarded-For": "198.51.100.9", "Forwarded": "for=1.2.3.4", "X-Real-IP": "1.2.3.4"},
			{"X-Forwarded-For": "1.2.3.4, 198.51.100.9"},
			{"X-Forwarded-For": "10.0.0.7, 198.51.100.9"},
		}},
		{httplimit.Forwarded, "for=198.51.100.9", []map[string]string{
			{"Forwarded": "for=198.51.100.9", "X-Forwarded-For": "1.2.3.4", "X-Real-IP": "1.2.3.4"},
			{"Forwarded": "for=1.2.3.4, for=198.51.100.9"},
			{"Forwarded": `for="[2001:db8::1]:1", for=198.51.100.9`},
		}},
		{httplimit.XRealIP, "198.51.100.9", []map[string]string{
			{"X-Real-IP": "198.51.100.9", "X-Forwarded-For": "1.2.3.4", "Forwarded": "for=1.2.3.4"},
		}},
	} {
		s, clock := memStore(t)
		h := mw(t, httplimit.Config{
			Limiter: bucket(t, s, clock, 1),
			Key:     httplimit.ClientIP{TrustedProxies: trusted, Header: tt.header},
		})(ok)
		if resp := get(t, h, "10.0.0.1:1", map[string]string{string(tt.header): tt.legit}); resp.StatusCode != 200 {
			t.Fatalf("%s: first request: %s", tt.header, resp.Status)
		}
		for _, spoof := range tt.spoofs {
			if resp := get(t, h, "10.0.0.1:1", spoof); resp.StatusCode != 429 {
				t.Errorf("%s: %q escaped the limit: %s", tt.header, spoof, resp.Status)
			}
		}
	}
}

// A spoofed X-Forwarded-For from an untrusted peer does not change the
// key, end to end: the second request is denied.
func TestSpoofedHeaderDoesNotEscape(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 1)})(ok)
	if get(t, h, "203.0.113.7:1", nil).StatusCode != 200 {
		t.Fatal("first request denied")
	}
	if resp := get(t, h, "203.0.113.7:2", map[string]string{"X-Forwarded-For": "9.9.9.9", "Forwarded": "for=8.8.8.8"}); resp.StatusCode != 429 {
		t.Fatalf("spoofed header escaped the limit: %s", resp.Status)
	}
}

func TestHeaderKey(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 1), Key: httplimit.Header("X-API-Key")})(ok)
	if get(t, h, "1.1.1.1:1", map[string]string{"X-API-Key": "a"}).StatusCode != 200 ||
		get(t, h, "2.2.2.2:1", map[string]string{"X-API-Key": "a"}).StatusCode != 429 ||
		get(t, h, "2.2.2.2:1", map[string]string{"X-API-Key": "b"}).StatusCode != 200 {
		t.Fatal("header key not applied")
	}
	if get(t, h, "1.1.1.1:1", nil).StatusCode != 400 {
		t.Fatal("missing header not refused")
	}
}

// A header's value is the client's to write: bounded as grpclimit.Metadata
// bounds a metadata value. Before, any value up to the 64 KiB key limit
// was a key, and of several lines the first was silently used.
func TestHeaderKeyBounds(t *testing.T) {
	s, clock := memStore(t)
	var errs []error
	h := mw(t, httplimit.Config{
		Limiter: bucket(t, s, clock, 100),
		Key:     httplimit.Header("X-API-Key"),
		OnError: func(_ *http.Request, err error) { errs = append(errs, err) },
	})(ok)
	for _, tt := range []struct {
		lines []string
		want  int
	}{
		{[]string{strings.Repeat("k", 256)}, 200},
		{[]string{strings.Repeat("k", 257)}, 400},
		{[]string{"a", "b"}, 400},
		{[]string{""}, 400},
	} {
		res := request("1.1.1.1:1", map[string][]string{"X-API-Key": tt.lines})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, res)
		if rec.Code != tt.want {
			t.Errorf("%d lines (first %d bytes): %d, want %d", len(tt.lines), len(tt.lines[0]), rec.Code, tt.want)
		}
	}
	if len(errs) != 3 || !strings.Contains(errs[1].Error(), "has 2 values, want one") {
		t.Errorf("errors %v", errs)
	}
	// MaxLen raises the bound, up to core.MaxKeyLen less the key's "h:".
	h = mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 100), Key: httplimit.HeaderKey{Name: "X-API-Key", MaxLen: 1024}})(ok)
	if got := get(t, h, "1.1.1.1:1", map[string]string{"X-API-Key": strings.Repeat("k", 1024)}).StatusCode; got != 200 {
		t.Errorf("a 1024-byte value with MaxLen 1024: %d, want 200", got)
	}
}

// A HeaderKey that can never read a header is the server's mistake: New
// refuses it, naming the field. Before, Header("") made every request 400.
func TestHeaderKeyConfigErrors(t *testing.T) {
	s, clock := memStore(t)
	l := bucket(t, s, clock, 1)
	for name, key := range map[string]httplimit.Keyer{
		"HeaderKey.Name: the header name is empty":  httplimit.Header(""),
		"HeaderKey.Name: the header name \"X API\"": httplimit.Header("X API"),
		"HeaderKey.MaxLen -1":                       httplimit.HeaderKey{Name: "X-Key", MaxLen: -1},
		"HeaderKey.MaxLen 65537":                    &httplimit.HeaderKey{Name: "X-Key", MaxLen: core.MaxKeyLen + 1},
		"HeaderKey.MaxLen 65535":                    httplimit.HeaderKey{Name: "X-Key", MaxLen: core.MaxKeyLen - 1}, // "h:" and 65535 bytes is no key
		"a nil *HeaderKey":                          (*httplimit.HeaderKey)(nil),
	} {
		for what, err := range map[string]error{
			"Key": func() error {
				_, err := httplimit.New(httplimit.Config{Limiter: l, Key: key})
				return err
			}(),
			"ConcurrencyConfig.Key": func() error {
				cl, _ := ccLimiter(t, 1, time.Minute)
				_, err := httplimit.Concurrency(httplimit.ConcurrencyConfig{Limiter: cl, Key: key})
				return err
			}(),
		} {
			if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s %q: %v, want core.ErrInvalidConfig naming %s", what, name, err, name)
			}
		}
	}
}

// fixed decides every request alike.
type fixed core.Decision

func (f fixed) Allow(context.Context, string) (core.Decision, error) { return core.Decision(f), nil }
func (f fixed) AllowN(context.Context, string, int64) (core.Decision, error) {
	return core.Decision(f), nil
}
func (f fixed) Peek(context.Context, string) (core.Decision, error) { return core.Decision(f), nil }
func (f fixed) Refund(context.Context, string, int64) (core.Decision, error) {
	return core.Decision(f), nil
}
func (f fixed) Decide(context.Context, core.Request) (core.Decision, error) {
	return core.Decision(f), nil
}
func (f fixed) Reset(context.Context, string) error { return nil }
func (f fixed) MaxCost() int64                      { return math.MaxInt64 }

// A limit beyond RFC 8941's Integer range (15 digits) would make the
// whole RateLimit field malformed, and the draft has clients ignore a
// malformed field: every Integer stays within 999999999999999.
func TestHugeLimitFitsStructuredFields(t *testing.T) {
	h := mw(t, httplimit.Config{Name: "api", Limiter: fixed{Allowed: true, Limit: 1 << 50, Remaining: 1<<50 - 1, ResetAfter: time.Second}, Window: time.Hour})(ok)
	res := get(t, h, "10.0.0.1:1", nil)
	for k, want := range map[string]string{
		"RateLimit-Policy": `"api";q=999999999999999;w=3600`,
		"RateLimit":        `"api";r=999999999999999;t=1`,
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// The largest Window must not overflow into a negative w.
func TestHugeWindow(t *testing.T) {
	h := mw(t, httplimit.Config{Name: "api", Limiter: fixed{Allowed: true, Limit: 1}, Window: math.MaxInt64})(ok)
	if got, want := get(t, h, "10.0.0.1:1", nil).Header.Get("RateLimit-Policy"), `"api";q=1;w=9223372037`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
}

// A ClientIP behind a listener without IP addresses (a unix socket, whose
// requests have RemoteAddr "@" or "") cannot key any request: that is the
// server's mistake, answered 500 and logged at error level, paced, where
// it was answered 400 and logged at debug level only, so that nobody saw
// it. The store errors keep a pacer of their own.
func TestRemoteAddrNotIP(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recorder{level: slog.LevelDebug}
	m, err := httplimit.NewWithClock(httplimit.Config{
		Limiter: failing{core.ErrStore},
		Logger:  slog.New(rec),
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := m(ok)
	for _, remote := range []string{"@", "", "@"} {
		if got := get(t, h, remote, nil).StatusCode; got != http.StatusInternalServerError {
			t.Errorf("remote address %q: %d, want 500", remote, got)
		}
	}
	get(t, h, "10.0.0.1:1", nil) // a store error: its own line
	if got := fmt.Sprint(rec.levels()); got != "[ERROR ERROR]" {
		t.Fatalf("log levels %s, want [ERROR ERROR]: one line for the three requests, one for the store", got)
	}
	if err, _ := attr(rec.records()[0], "error").Any().(error); !errors.Is(err, httplimit.ErrRemoteNotIP) {
		t.Errorf("logged error %v, want one wrapping ErrRemoteNotIP", err)
	}

	// The Concurrency middleware alike, and OnError gets every one.
	var errs []error
	cl, _ := ccLimiter(t, 1, time.Minute)
	cc := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: cl, OnError: func(_ *http.Request, err error) { errs = append(errs, err) }})(ok)
	for range 2 {
		if got := get(t, cc, "@", nil).StatusCode; got != http.StatusInternalServerError {
			t.Errorf("Concurrency, remote address @: %d, want 500", got)
		}
	}
	if len(errs) != 2 || !errors.Is(errs[0], httplimit.ErrRemoteNotIP) {
		t.Errorf("OnError got %v", errs)
	}
}

// Clients get a short message of the middleware's own; the error, with
// what it says of keys, headers and the store, goes to OnError (or the
// log) only.
func TestClientMessagesAreShort(t *testing.T) {
	s, clock := memStore(t)
	storeErr := fmt.Errorf("%w: WRONGPASS invalid username-password pair", core.ErrStore)
	for _, c := range []struct {
		name   string
		cfg    httplimit.Config
		url    string
		status int
	}{
		{"a missing key", httplimit.Config{Limiter: bucket(t, s, clock, 2), Key: httplimit.Header("X-API-Key")}, "/", 400},
		{"a cost that cannot be read", httplimit.Config{Limiter: bucket(t, s, clock, 2), Cost: func(r *http.Request) (int64, error) {
			return strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		}}, "/?n=x", 400},
		{"a cost above the limit", httplimit.Config{Limiter: bucket(t, s, clock, 2), Cost: func(*http.Request) (int64, error) { return 9, nil }}, "/", 400},
		{"a store that refuses", httplimit.Config{Limiter: failing{storeErr}, FailClosed: true}, "/", 503},
		{"LimiterFor fails", httplimit.Config{LimiterFor: func(*http.Request) (core.Limiter, error) {
			return nil, errors.New("tier lookup: no plan for tenant 42")
		}}, "/", 500},
		{"a Keyer misconfigured", httplimit.Config{Limiter: bucket(t, s, clock, 2), Key: httplimit.KeyFunc(func(r *http.Request) (string, error) {
			return httplimit.ClientIP{IPv6Prefix: 200}.Key(r)
		})}, "/", 500},
	} {
		var reported []error
		c.cfg.OnError = func(_ *http.Request, err error) { reported = append(reported, err) }
		req := httptest.NewRequest("GET", c.url, nil)
		req.RemoteAddr = "10.0.0.1:1"
		rec := httptest.NewRecorder()
		mw(t, c.cfg)(ok).ServeHTTP(rec, req)
		body := strings.TrimSpace(rec.Body.String())
		if rec.Code != c.status || len(reported) != 1 {
			t.Errorf("%s: %d, %d errors reported; want %d and one", c.name, rec.Code, len(reported), c.status)
			continue
		}
		for _, leak := range []string{"ratekit", "X-API-Key", "WRONGPASS", "tenant", "IPv6Prefix", ": strconv", "n = 9"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s: the client read %q, which holds %q (the error: %v)", c.name, body, leak, reported[0])
			}
		}
		if len(body) > 60 {
			t.Errorf("%s: the client read %d bytes: %q", c.name, len(body), body)
		}
	}
}

// Window names w for a single limiter; a policy's items carry each
// limit's own Window, whatever Window says.
func TestWindowOverridesOnlyASingleLimiter(t *testing.T) {
	s, clock := memStore(t)
	p := policy(t, ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "burst", Limiter: bucket(t, s, clock, 5)}}})
	res := get(t, mw(t, httplimit.Config{Limiter: p, Window: time.Hour})(ok), "10.0.0.1:1", nil)
	if got := res.Header.Get("RateLimit-Policy"); got != `"burst";q=5;w=50` {
		t.Errorf("a policy with Window set: RateLimit-Policy %q, want its limit's own w=50", got)
	}
	res = get(t, mw(t, httplimit.Config{Limiter: bucket(t, s, clock, 5), Window: time.Hour})(ok), "10.0.0.1:1", nil)
	if got := res.Header.Get("RateLimit-Policy"); got != `"default";q=5;w=3600` {
		t.Errorf("a limiter with Window set: RateLimit-Policy %q, want w=3600", got)
	}
}

// hanging is a limiter whose calls ignore their context and return only
// once release is closed: a store that hangs, behind a client that does
// not honour deadlines.
type hanging struct {
	failing
	release chan struct{}
}

func (h hanging) Decide(context.Context, core.Request) (core.Decision, error) {
	<-h.release
	return core.Decision{Allowed: true, Limit: 1}, nil
}

// Timeout bounds every decision whatever the limiter does with its
// context (DefaultTimeout when 0): the request is served (or answered 503
// with FailClosed) while the limiter still hangs, and the error reported
// wraps core.ErrStore and context.DeadlineExceeded.
func TestTimeoutBoundsADecision(t *testing.T) {
	for _, c := range []struct {
		timeout    time.Duration
		failClosed bool
		status     int
	}{{0, false, 200}, {20 * time.Millisecond, false, 200}, {20 * time.Millisecond, true, 503}} {
		release := make(chan struct{})
		var reported []error
		m, err := httplimit.New(httplimit.Config{Limiter: hanging{release: release}, Timeout: c.timeout, FailClosed: c.failClosed,
			OnError: func(_ *http.Request, err error) { reported = append(reported, err) }})
		if err != nil {
			t.Fatal(err)
		}
		h := m(ok)
		done := make(chan int, 1)
		go func() { done <- get(t, h, "10.0.0.1:1", nil).StatusCode }()
		select {
		case status := <-done:
			if status != c.status || len(reported) != 1 || !errors.Is(reported[0], core.ErrStore) || !errors.Is(reported[0], context.DeadlineExceeded) {
				t.Errorf("Timeout %v, FailClosed %v: %d, reported %v; want %d and a deadline", c.timeout, c.failClosed, status, reported, c.status)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Timeout %v: the request waited for a hung limiter", c.timeout)
		}
		close(release)
	}
}

// Config.Params gives each request its limits: a tenant's contract here.
// The RateLimit fields say the limit applied, a refund gives back under
// it, and an error answers 500.
func TestParamsPerRequest(t *testing.T) {
	s, clock := memStore(t)
	lim := bucket(t, s, clock, 2)
	contracts := map[string][]core.Params{}
	for tenant, capacity := range map[string]int64{"gold": 5, "free": 1} {
		p, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		contracts[tenant] = []core.Params{p}
	}
	errDB := errors.New("contracts unavailable")
	h := mw(t, httplimit.Config{
		Limiter: lim,
		Key:     httplimit.Header("X-Tenant"),
		Params: func(r *http.Request) ([]core.Params, error) {
			if r.Header.Get("X-Tenant") == "broken" {
				return nil, errDB
			}
			return contracts[r.Header.Get("X-Tenant")], nil // nil: the limiter's own
		},
		Counts: func(status int) bool { return status != http.StatusTeapot },
		Logger: slog.New(slog.DiscardHandler),
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Teapot") != "" {
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	for tenant, limit := range map[string]int{"gold": 5, "free": 1, "other": 2} {
		for i := range limit + 1 {
			res := get(t, h, "192.0.2.1:1", map[string]string{"X-Tenant": tenant})
			want := http.StatusOK
			if i == limit {
				want = http.StatusTooManyRequests
			}
			if res.StatusCode != want || !strings.Contains(res.Header.Get("RateLimit-Policy"), fmt.Sprintf(";q=%d;", limit)) {
				t.Errorf("%s, request %d: %d %q, want %d and q=%d", tenant, i, res.StatusCode, res.Header.Get("RateLimit-Policy"), want, limit)
			}
		}
	}
	// A request that does not count gives its unit back under its own
	// limits: gold's bucket had 0 left, and has 1 again.
	clock.Advance(10 * time.Second) // one refill: gold has 1
	get(t, h, "192.0.2.1:1", map[string]string{"X-Tenant": "gold", "X-Teapot": "1"})
	if d, err := lim.Decide(context.Background(), core.Request{Key: "h:gold", N: 1, Op: core.OpPeek, Params: contracts["gold"]}); err != nil || d.Remaining != 1 {
		t.Errorf("gold after a refunded request: %+v, %v; want 1 left", d, err)
	}
	if res := get(t, h, "192.0.2.1:1", map[string]string{"X-Tenant": "broken"}); res.StatusCode != http.StatusInternalServerError {
		t.Errorf("Params failing: %d, want 500", res.StatusCode)
	}
}
