package otelratekit_test

import (
	"context"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// A policy whose daily limit runs in shadow: the second request is
// allowed, counted as "shadow", and the daily limit's part says it would
// have denied.
func ExampleTelemetry_Policy() {
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
	api, err := tel.Policy("api", policy)
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
