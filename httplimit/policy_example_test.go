package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

// A policy of two limits over HTTP: a burst and a daily quota, decided at
// once. Both are named in the headers; the 429 says which one denied, and
// the burst counted nothing for the denied request. Only responses with
// status >= 400 count toward them: the 200s are refunded.
func ExampleConfig_policy() {
	store, _ := memory.New()
	defer store.Close()
	burst, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: "api:burst:"})
	daily, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 2, Window: 24 * time.Hour, Prefix: "api:daily:"})
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "burst", Limiter: burst},
		{Name: "daily", Limiter: daily},
	}})
	if err != nil {
		panic(err)
	}
	limit, err := httplimit.New(httplimit.Config{
		Limiter: policy,
		Counts:  func(status int) bool { return status >= 400 },
	})
	if err != nil {
		panic(err)
	}
	status := http.StatusOK
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))

	for i, s := range []int{200, 404, 500, 200} {
		status = s
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "198.51.100.7:4567"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(i, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 0 200 "burst";r=9;t=1, "daily";r=1;t=86400
	// 1 404 "burst";r=9;t=1, "daily";r=1;t=86400
	// 2 500 "burst";r=8;t=2, "daily";r=0;t=86400
	// 3 429 "burst";r=8;t=2, "daily";r=0;t=86400
}

// LimiterFor picks each request's limiter: here its tenant's tier, from
// a ratekit.Tiers. The tenants' plans are the application's own record.
func ExampleConfig_limiterFor() {
	store, _ := memory.New()
	defer store.Close()
	tier := func(perMinute int64) *ratekit.Limiter {
		l, err := fixedwindow.New(store, fixedwindow.Config{Limit: perMinute, Window: time.Minute, Prefix: "api:minute:"})
		if err != nil {
			panic(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "minute", Limiter: l}}})
		if err != nil {
			panic(err)
		}
		return p
	}
	tiers, err := ratekit.NewTiers(map[string]*ratekit.Limiter{"free": tier(1), "paid": tier(100)})
	if err != nil {
		panic(err)
	}
	plans := map[string]string{"acme": "paid", "tiny": "free"}
	limit, err := httplimit.New(httplimit.Config{
		Key: httplimit.Header("X-Tenant"),
		LimiterFor: func(r *http.Request) (core.Limiter, error) {
			return tiers.Policy(plans[r.Header.Get("X-Tenant")])
		},
	})
	if err != nil {
		panic(err)
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, tenant := range []string{"acme", "tiny", "acme", "tiny"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Tenant", tenant)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(tenant, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// acme 200 "minute";q=100;w=60
	// tiny 200 "minute";q=1;w=60
	// acme 200 "minute";q=100;w=60
	// tiny 429 "minute";q=1;w=60
}

// A limit per tenant, from the tenant's contract: Params gives each
// request its limits, and the fields say the limit applied.
func ExampleConfig_params() {
	store, _ := memory.New()
	defer store.Close()
	limiter, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	contracts := map[string][]core.Params{} // from your records, built once
	for tenant, perMinute := range map[string]int64{"acme": 100, "tiny": 1} {
		p, err := fixedwindow.NewParams(fixedwindow.Config{Limit: perMinute, Window: time.Minute})
		if err != nil {
			panic(err)
		}
		contracts[tenant] = []core.Params{p}
	}
	limit, err := httplimit.New(httplimit.Config{
		Limiter: limiter,
		Key:     httplimit.Header("X-Tenant"),
		Params: func(r *http.Request) ([]core.Params, error) {
			return contracts[r.Header.Get("X-Tenant")], nil // nil: the limiter's own
		},
	})
	if err != nil {
		panic(err)
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for _, tenant := range []string{"acme", "tiny", "acme", "tiny"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Tenant", tenant)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(tenant, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// acme 200 "default";q=100;w=60
	// tiny 200 "default";q=1;w=60
	// acme 200 "default";q=100;w=60
	// tiny 429 "default";q=1;w=60
}
