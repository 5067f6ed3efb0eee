package otelratekit_test

import (
	"context"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// The leases a concurrency limiter holds in this process: two acquired,
// one released.
func ExampleTelemetry_Concurrency() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{MeterProvider: mp})

	mem, _ := memory.New()
	defer mem.Close()
	store, _ := tel.Store(mem)
	cl, _ := concurrency.New(store, concurrency.Config{Limit: 5, TTL: time.Minute})
	reports, err := tel.Concurrency("reports", cl)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _, _ := reports.Acquire(ctx, "tenant:7")
	reports.Acquire(ctx, "tenant:7")
	reports.Release(ctx, first)

	var rm metricdata.ResourceMetrics
	reader.Collect(ctx, &rm)
	printSums(rm, "ratekit.concurrency.leases", "ratekit.decisions")
	// Output:
	// ratekit.concurrency.leases ratekit.algorithm=concurrency,ratekit.limiter.name=reports,ratekit.store=memory = 1
	// ratekit.decisions ratekit.algorithm=concurrency,ratekit.limiter.name=reports,ratekit.outcome=allowed,ratekit.store=memory = 2
}
