package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/internal/fakeclock"
	"github.com/ratekit/ratekit/internal/redistest"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
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

func bucket(t *testing.T, r core.ScriptRunner, clock core.Clock, capacity int64) *tokenbucket.Limiter {
	l, err := tokenbucket.New(r, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: 10 * time.Second, Clock: clock, Prefix: fmt.Sprintf("http:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mw(t *testing.T, cfg httplimit.Config) func(http.Handler) http.Handler {
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
		Policies:      []httplimit.Policy{{Name: "api", Limiter: bucket(t, s, clock, 3), Window: 30 * time.Second}},
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
	for k, want := range map[string]string{
		"RateLimit-Policy":      `"api";q=3;w=30`,
		"RateLimit":             `"api";r=0;t=30`,
		"Retry-After":           "10",
		"X-RateLimit-Limit":     "3",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     "30",
	} {
		if got := h2.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

func TestRetryAfterRoundsUpAndIsNeverZero(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 1)}}})(ok)
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
	if got := get(t, h, "10.0.0.1:1", nil).Header.Get("RateLimit-Policy"); got != `"default";q=1` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
}

func TestDeniedBodies(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 1)}}})(ok)
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
		Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 1)}},
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

func TestMultiplePoliciesAndCost(t *testing.T) {
	s, clock := memStore(t)
	perIP := bucket(t, s, clock, 10)
	global, _ := fixedwindow.New(s, fixedwindow.Config{Limit: 4, Window: time.Minute, Clock: clock})
	h := mw(t, httplimit.Config{
		Policies: []httplimit.Policy{{Name: "ip", Limiter: perIP}, {Name: "global", Limiter: global, Window: time.Minute, Key: func(*http.Request) (string, error) { return "all", nil }}},
		Cost: func(r *http.Request) (int64, error) {
			if r.URL.Query().Get("heavy") != "" {
				return 3, nil
			}
			return 1, nil
		},
	})(ok)
	resp := get(t, h, "10.0.0.1:1", nil)
	if got := resp.Header.Get("RateLimit-Policy"); got != `"ip";q=10, "global";q=4;w=60` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
	if got := resp.Header.Get("RateLimit"); got != `"ip";r=9;t=10, "global";r=3;t=60` {
		t.Fatalf("RateLimit %q", got)
	}
	req := httptest.NewRequest("GET", "/?heavy=1", nil)
	req.RemoteAddr = "10.0.0.2:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get("RateLimit"); rec.Code != 200 || got != `"ip";r=7;t=30, "global";r=0;t=60` {
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
	mux.Handle("/login", mw(t, httplimit.Config{Policies: []httplimit.Policy{{Name: "login", Limiter: bucket(t, s, clock, 1)}}})(ok))
	mux.Handle("/api", mw(t, httplimit.Config{Policies: []httplimit.Policy{{Name: "api", Limiter: bucket(t, s, clock, 5)}}})(ok))
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

type failing struct{ err error }

func (f failing) AllowN(context.Context, string, int64) (core.Decision, error) {
	return core.Decision{}, f.err
}

func TestStoreErrors(t *testing.T) {
	storeErr := fmt.Errorf("%w: connection refused", core.ErrStore)
	var reported []error
	open := mw(t, httplimit.Config{
		Policies: []httplimit.Policy{{Limiter: failing{storeErr}}},
		OnError:  func(_ *http.Request, err error) { reported = append(reported, err) },
	})(ok)
	resp := get(t, open, "10.0.0.1:1", nil)
	if resp.StatusCode != 200 || len(reported) != 1 || !errors.Is(reported[0], core.ErrStore) {
		t.Fatalf("fail open: %s, reported %v", resp.Status, reported)
	}
	closed := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: failing{storeErr}}}, FailClosed: true})(ok)
	if resp := get(t, closed, "10.0.0.1:1", nil); resp.StatusCode != 503 {
		t.Fatalf("fail closed: %s", resp.Status)
	}
	// A cost the limiter can never allow is the client's fault: 400.
	s, clock := memStore(t)
	big := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 2)}}, Cost: func(*http.Request) (int64, error) { return 5, nil }})(ok)
	if resp := get(t, big, "10.0.0.1:1", nil); resp.StatusCode != 400 {
		t.Fatalf("cost above capacity: %s", resp.Status)
	}
}

func TestConfigErrors(t *testing.T) {
	s, clock := memStore(t)
	l := bucket(t, s, clock, 1)
	for name, cfg := range map[string]httplimit.Config{
		"no policies":     {},
		"nil limiter":     {Policies: []httplimit.Policy{{Name: "a"}}},
		"bad name":        {Policies: []httplimit.Policy{{Name: "a\nb", Limiter: l}}},
		"duplicate name":  {Policies: []httplimit.Policy{{Name: "a", Limiter: l}, {Name: "a", Limiter: l}}},
		"negative window": {Policies: []httplimit.Policy{{Limiter: l, Window: -time.Second}}},
	} {
		if _, err := httplimit.New(cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tt := range []struct {
		name   string
		key    httplimit.ClientIP
		remote string
		hdr    map[string]string
		want   string
	}{
		{"plain v4", httplimit.ClientIP{}, "203.0.113.7:5555", nil, "ip4:203.0.113.7"},
		{"spoofed XFF from an untrusted peer", httplimit.ClientIP{}, "203.0.113.7:5555", map[string]string{"X-Forwarded-For": "1.2.3.4"}, "ip4:203.0.113.7"},
		{"spoofed XFF, proxies trusted but not this peer", httplimit.ClientIP{TrustedProxies: trusted}, "203.0.113.7:5555", map[string]string{"X-Forwarded-For": "1.2.3.4"}, "ip4:203.0.113.7"},
		{"trusted proxy", httplimit.ClientIP{TrustedProxies: trusted}, "10.1.1.1:80", map[string]string{"X-Forwarded-For": "198.51.100.9"}, "ip4:198.51.100.9"},
		{"spoof left of the real client", httplimit.ClientIP{TrustedProxies: trusted}, "10.1.1.1:80", map[string]string{"X-Forwarded-For": "1.2.3.4, 198.51.100.9, 10.2.2.2"}, "ip4:198.51.100.9"},
		{"Forwarded wins", httplimit.ClientIP{TrustedProxies: trusted}, "10.1.1.1:80", map[string]string{"Forwarded": `for="[2001:db8:1:2::5]:4711";proto=https`, "X-Forwarded-For": "1.2.3.4"}, "ip6:2001:db8:1:2::/64"},
		{"garbage hop keeps the proxy's view", httplimit.ClientIP{TrustedProxies: trusted}, "10.1.1.1:80", map[string]string{"X-Forwarded-For": "evil, 10.3.3.3"}, "ip4:10.3.3.3"},
		{"v6 grouped by /64", httplimit.ClientIP{}, "[2001:db8:aa:bb:1:2:3:4]:80", nil, "ip6:2001:db8:aa:bb::/64"},
		{"v6 other address, same /64", httplimit.ClientIP{}, "[2001:db8:aa:bb:ffff::1]:80", nil, "ip6:2001:db8:aa:bb::/64"},
		{"v6 /48", httplimit.ClientIP{IPv6Prefix: 48}, "[2001:db8:aa:bb::1]:80", nil, "ip6:2001:db8:aa::/48"},
		{"v6 whole address", httplimit.ClientIP{IPv6Prefix: 128}, "[2001:db8::1]:80", nil, "ip6:2001:db8::1/128"},
		{"v4-mapped v6", httplimit.ClientIP{}, "[::ffff:192.0.2.1]:80", nil, "ip4:192.0.2.1"},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tt.remote
		for k, v := range tt.hdr {
			req.Header.Set(k, v)
		}
		got, err := tt.key.Key(req)
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "nonsense"
	if _, err := (httplimit.ClientIP{}).Key(req); err == nil {
		t.Error("bad remote address: no error")
	}
	if _, err := (httplimit.ClientIP{IPv6Prefix: 129}).Key(httptest.NewRequest("GET", "/", nil)); err == nil {
		t.Error("IPv6Prefix 129: no error")
	}
}

// A spoofed X-Forwarded-For from an untrusted peer does not change the
// key, end to end: the second request is denied.
func TestSpoofedHeaderDoesNotEscape(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 1)}}})(ok)
	if get(t, h, "203.0.113.7:1", nil).StatusCode != 200 {
		t.Fatal("first request denied")
	}
	if resp := get(t, h, "203.0.113.7:2", map[string]string{"X-Forwarded-For": "9.9.9.9", "Forwarded": "for=8.8.8.8"}); resp.StatusCode != 429 {
		t.Fatalf("spoofed header escaped the limit: %s", resp.Status)
	}
}

func TestHeaderKey(t *testing.T) {
	s, clock := memStore(t)
	h := mw(t, httplimit.Config{Policies: []httplimit.Policy{{Limiter: bucket(t, s, clock, 1)}}, Key: httplimit.Header("X-API-Key")})(ok)
	if get(t, h, "1.1.1.1:1", map[string]string{"X-API-Key": "a"}).StatusCode != 200 ||
		get(t, h, "2.2.2.2:1", map[string]string{"X-API-Key": "a"}).StatusCode != 429 ||
		get(t, h, "2.2.2.2:1", map[string]string{"X-API-Key": "b"}).StatusCode != 200 {
		t.Fatal("header key not applied")
	}
	if get(t, h, "1.1.1.1:1", nil).StatusCode != 400 {
		t.Fatal("missing header not refused")
	}
}

// The same middleware over a real redis-server.
func TestOverRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	lim, err := fixedwindow.New(goredisstore.New(rdb), fixedwindow.Config{Limit: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mw(t, httplimit.Config{Policies: []httplimit.Policy{{Name: "fw", Limiter: lim, Window: time.Minute}}})(ok))
	defer ts.Close()
	var codes []int
	for i := 0; i < 3; i++ {
		resp, err := http.Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.Header.Get("RateLimit-Policy") != `"fw";q=2;w=60` {
			t.Fatalf("RateLimit-Policy %q", resp.Header.Get("RateLimit-Policy"))
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("codes %v", codes)
	}
}
