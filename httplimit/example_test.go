package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	// 10 a minute, 2 at once: q (the Decision's Limit) is the burst of 2,
	// which comes back in full in 12 s, the limiter's Window, so
	// RateLimit-Policy says "2 per 12 s", which is 10 a minute.
	limiter, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Minute, Burst: 2})

	limit, err := httplimit.New(httplimit.Config{
		Name: "api", Limiter: limiter,
		// Behind load balancers at 10.0.0.0/8 that append to X-Forwarded-For.
		Key: httplimit.ClientIP{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
			Header:         httplimit.XForwardedFor,
		},
	})
	if err != nil {
		panic(err)
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))

	for i := 0; i < 3; i++ {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:4567"
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if i == 0 {
			fmt.Println(rec.Header().Get("RateLimit-Policy"))
		}
		fmt.Println(rec.Code, rec.Header().Get("RateLimit"), "retry:"+rec.Header().Get("Retry-After"))
	}
	// Output:
	// "api";q=2;w=12
	// 200 "api";r=1;t=6 retry:
	// 200 "api";r=0;t=12 retry:
	// 429 "api";r=0;t=6 retry:6
}

// Keyed by API key rather than by client IP; a request without one is
// refused with 400 before any limiter is asked.
func ExampleHeader() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Hour, Burst: 1})
	limit, _ := httplimit.New(httplimit.Config{
		Name: "per-key", Limiter: limiter,
		Key: httplimit.Header("X-API-Key"),
	})
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, key := range []string{"k1", "k1", "k2", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(key, rec.Code)
	}
	// Output:
	// k1 200
	// k1 429
	// k2 200
	//  400
}

// The next handler can read the decision, to report what remains.
func ExampleDecisionFromContext() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 5, Period: time.Minute, Burst: 5})
	limit, _ := httplimit.New(httplimit.Config{Name: "api", Limiter: limiter})
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := httplimit.DecisionFromContext(r.Context())
		fmt.Fprintf(w, "%v: %d of %d left", ok, d.Remaining, d.Limit)
	}))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Body.String())
	// Output:
	// true: 4 of 5 left
}

// Behind proxies that append to X-Forwarded-For, the client is the
// rightmost address that is not a trusted proxy: what a client writes to
// the left of it, or in any other header, does not matter.
func ExampleClientIP() {
	key := httplimit.ClientIP{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Header:         httplimit.XForwardedFor,
	}
	for _, xff := range []string{
		"198.51.100.7",                    // the client, as the load balancer saw it
		"1.2.3.4, 198.51.100.7",           // the client wrote 1.2.3.4 itself
		"198.51.100.7, 10.0.0.9",          // through a second trusted proxy
		"1.2.3.4, 10.0.0.3, 198.51.100.7", // a fake trusted hop changes nothing
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:4567" // the load balancer
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set("Forwarded", "for=1.2.3.4") // never read: not the chosen header
		k, _ := key.Key(req)
		fmt.Println(k)
	}
	// Output:
	// ip4:198.51.100.7
	// ip4:198.51.100.7
	// ip4:198.51.100.7
	// ip4:198.51.100.7
}

// Behind proxies that speak RFC 7239. IPv6 clients are grouped by /64.
func ExampleClientIP_forwarded() {
	key := httplimit.ClientIP{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Header:         httplimit.Forwarded,
	}
	for _, fwd := range []string{
		`for="[2001:db8:cafe::17]:4711";proto=https`,
		`for=192.0.2.60;proto=http, for=10.0.0.9`,
		`for=_hidden`, // an obfuscated client: the proxy is all we know
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:4567"
		req.Header.Set("Forwarded", fwd)
		k, _ := key.Key(req)
		fmt.Println(k)
	}
	// Output:
	// ip6:2001:db8:cafe::/64
	// ip4:192.0.2.60
	// ip4:10.1.2.3
}

// A ClientIP's settings are checked by New, not on every request.
func ExampleNew_invalidClientIP() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Minute, Burst: 2})
	_, err := httplimit.New(httplimit.Config{
		Name: "api", Limiter: limiter,
		// Trusted to set which header?
		Key: httplimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
	})
	fmt.Println(errors.Is(err, core.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// ratekit: invalid config: httplimit: Key: ClientIP.Header is empty: name the header the TrustedProxies set (XForwardedFor, Forwarded or XRealIP)
}

// An ordinary function is a Keyer through KeyFunc: here one key for all
// clients, a limit they share.
func ExampleKeyFunc() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Hour, Burst: 2})
	limit, _ := httplimit.New(httplimit.Config{
		Name: "everyone", Limiter: limiter,
		Key: httplimit.KeyFunc(func(*http.Request) (string, error) { return "all", nil }),
	})
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, remote := range []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(remote, rec.Code)
	}
	// Output:
	// 192.0.2.1:1 200
	// 192.0.2.2:1 200
	// 192.0.2.3:1 429
}

// deadStore stands for a Redis store whose server cannot be reached.
type deadStore struct{}

func (deadStore) RunScript(context.Context, *core.Script, []string, []int64, []int64) ([]int64, error) {
	return nil, fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connection refused", core.ErrStore)
}

// Without OnError, store failures go to the Logger (slog.Default() when
// nil): the request is served (fail open), and the failure logged, at most
// one line every 10 seconds.
func ExampleConfig_logger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for this example
			}
			return a
		},
	}))
	limiter, _ := gcra.New(deadStore{}, gcra.Config{Rate: 5, Period: time.Minute, Burst: 5})
	limit, _ := httplimit.New(httplimit.Config{
		Name: "api", Limiter: limiter,
		Logger: logger,
	})
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code)
	// Output:
	// level=ERROR msg="httplimit: limiter failed, request served without it (fail open)" error="httplimit: ratekit: store failed: dial tcp 127.0.0.1:6379: connection refused" limiter=api key=ip4:192.0.2.1 suppressed=0
	// 200
}

// At most 2 requests in flight per client: a third, while two are being
// served, gets 429 with Retry-After, the time until a lease expires at the
// latest.
func ExampleConcurrency() {
	store, _ := memory.New()
	defer store.Close()
	leases, _ := concurrency.New(store, concurrency.Config{Limit: 2, TTL: 30 * time.Second})
	concurrent, err := httplimit.Concurrency(httplimit.ConcurrencyConfig{Limiter: leases})
	if err != nil {
		panic(err)
	}
	started, finish := make(chan struct{}), make(chan struct{})
	handler := concurrent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-finish // a slow report
	}))
	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/report", nil)
		req.RemoteAddr = "198.51.100.7:4567"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	done := make(chan int)
	for i := 0; i < 2; i++ {
		go func() { done <- serve().Code }()
		<-started
	}
	third := serve()
	fmt.Println(third.Code, "retry:"+third.Header().Get("Retry-After"))
	close(finish)
	fmt.Println(<-done, <-done)
	d, _ := leases.Peek(context.Background(), "ip4:198.51.100.7")
	fmt.Println("in flight:", d.Limit-d.Remaining)
	// Output:
	// 429 retry:30
	// 200 200
	// in flight: 0
}

// A handler that may outlast the lease's TTL extends it: by itself with
// the lease from its context, or with ConcurrencyConfig.ExtendEvery.
func ExampleLeaseFromContext() {
	store, _ := memory.New()
	defer store.Close()
	leases, _ := concurrency.New(store, concurrency.Config{Limit: 1, TTL: time.Minute})
	concurrent, _ := httplimit.Concurrency(httplimit.ConcurrencyConfig{Limiter: leases, Key: httplimit.Header("X-Tenant")})
	handler := concurrent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := httplimit.LeaseFromContext(r.Context())
		// ... a long step of the export ...
		ok, _ := leases.Extend(r.Context(), lease)
		fmt.Fprintln(w, lease.Key, lease.N, ok)
	}))
	req := httptest.NewRequest("GET", "/export", nil)
	req.Header.Set("X-Tenant", "acme")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Print(rec.Body.String())
	// Output: h:acme 1 true
}
