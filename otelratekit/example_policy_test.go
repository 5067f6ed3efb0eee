package otelratekit_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// A policy is wrapped as any limiter. Its daily limit runs in shadow: the
// second request is allowed, counted as "shadow", and the daily limit's
// part says it would have denied.
func ExampleTelemetry_Limiter_policy() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{MeterProvider: mp})

	mem, _ := memory.New()
	defer mem.Close()
	store, _ := tel.Store(mem)
	burst, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 10, RefillInterval: time.Second, Prefix: "burst:"})
	daily, _ := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: 24 * time.Hour, Prefix: "daily:"})
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "burst", Limiter: burst},
		{Name: "daily", Limiter: daily, Shadow: true},
	}})
	if err != nil {
		panic(err)
	}
	api, err := tel.Limiter("api", policy)
	if err != nil {
		panic(err)
	}
	api.Allow(context.Background(), "user:42")
	api.Allow(context.Background(), "user:42")

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	printSums(rm, "ratekit.decisions", "ratekit.policy.limit.decisions")
	// Output:
	// ratekit.decisions ratekit.algorithm=policy,ratekit.limiter.name=api,ratekit.outcome=allowed,ratekit.store=memory = 1
	// ratekit.decisions ratekit.algorithm=policy,ratekit.limiter.name=api,ratekit.outcome=shadow,ratekit.store=memory = 1
	// ratekit.policy.limit.decisions ratekit.algorithm=fixedwindow,ratekit.limit.name=daily,ratekit.limiter.name=api,ratekit.outcome=allowed,ratekit.store=memory = 1
	// ratekit.policy.limit.decisions ratekit.algorithm=fixedwindow,ratekit.limit.name=daily,ratekit.limiter.name=api,ratekit.outcome=shadow,ratekit.store=memory = 1
	// ratekit.policy.limit.decisions ratekit.algorithm=tokenbucket,ratekit.limit.name=burst,ratekit.limiter.name=api,ratekit.outcome=allowed,ratekit.store=memory = 2
}

// A policy of 5 requests a second and 100 a minute, on Prometheus: of 8
// requests at once, "second" denies 3. The minute limit counted the 5
// that were allowed; its 3 other parts are not_counted, since a policy
// counts a request by all its limits or by none.
func Example_prometheus_policy() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		panic(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{MeterProvider: mp})

	// A clock that stands still, so that the 8 requests fall in one
	// second.
	mem, _ := memory.New(memory.WithClock(fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	defer mem.Close()
	second, _ := fixedwindow.New(mem, fixedwindow.Config{Limit: 5, Window: time.Second, Prefix: "second:"})
	minute, _ := fixedwindow.New(mem, fixedwindow.Config{Limit: 100, Window: time.Minute, Prefix: "minute:"})
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "second", Limiter: second},
		{Name: "minute", Limiter: minute},
	}})
	if err != nil {
		panic(err)
	}
	api, _ := tel.Limiter("api", policy)
	for i := 0; i < 8; i++ {
		api.Allow(context.Background(), "user:42")
	}

	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "ratekit_policy_limit_decisions_total") {
			fmt.Println(sc.Text())
		}
	}
	// Output:
	// ratekit_policy_limit_decisions_total{ratekit_algorithm="fixedwindow",ratekit_limit_name="minute",ratekit_limiter_name="api",ratekit_outcome="allowed",ratekit_store="memory"} 5
	// ratekit_policy_limit_decisions_total{ratekit_algorithm="fixedwindow",ratekit_limit_name="minute",ratekit_limiter_name="api",ratekit_outcome="not_counted",ratekit_store="memory"} 3
	// ratekit_policy_limit_decisions_total{ratekit_algorithm="fixedwindow",ratekit_limit_name="second",ratekit_limiter_name="api",ratekit_outcome="allowed",ratekit_store="memory"} 5
	// ratekit_policy_limit_decisions_total{ratekit_algorithm="fixedwindow",ratekit_limit_name="second",ratekit_limiter_name="api",ratekit_outcome="denied",ratekit_store="memory"} 3
}
