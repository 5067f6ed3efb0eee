package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 10, Period: time.Minute, Burst: 2})

	limit, err := httplimit.New(httplimit.Config{
		Policies: []httplimit.Policy{{Name: "api", Limiter: limiter, Window: time.Minute}},
		// Behind a load balancer at 10.0.0.0/8: believe its X-Forwarded-For.
		Key: httplimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}.Key,
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
		fmt.Println(rec.Code, rec.Header().Get("RateLimit"), "retry:"+rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 "api";r=1;t=6 retry:
	// 200 "api";r=0;t=12 retry:
	// 429 "api";r=0;t=12 retry:6
}

// Keyed by API key rather than by client IP; a request without one is
// refused with 400 before any limiter is asked.
func ExampleHeader() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := gcra.New(store, gcra.Config{Rate: 1, Period: time.Hour, Burst: 1})
	limit, _ := httplimit.New(httplimit.Config{
		Policies: []httplimit.Policy{{Name: "per-key", Limiter: limiter}},
		Key:      httplimit.Header("X-API-Key"),
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
	limit, _ := httplimit.New(httplimit.Config{Policies: []httplimit.Policy{{Name: "api", Limiter: limiter}}})
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
