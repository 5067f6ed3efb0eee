package otelratekit_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// printSums prints the points of the int64 counters and gauges in rm
// whose name is in names, one line each, sorted.
func printSums(rm metricdata.ResourceMetrics, names ...string) {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !contains(names, m.Name) {
				continue
			}
			var pts []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				pts = d.DataPoints
			case metricdata.Gauge[int64]:
				pts = d.DataPoints
			}
			for _, p := range pts {
				lines = append(lines, fmt.Sprintf("%s %s = %d", m.Name, attrs(p.Attributes), p.Value))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// Decisions counted by outcome, with the limiter's name, algorithm and
// store: wrap the store, build the limiter on it, wrap the limiter. A
// ManualReader stands for the exporter here (see Example_prometheus).
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := otelratekit.New(otelratekit.Config{MeterProvider: mp})
	if err != nil {
		panic(err)
	}

	mem, _ := memory.New()
	defer mem.Close()
	store, err := tel.Store(mem)
	if err != nil {
		panic(err)
	}
	lim, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	api, err := tel.Limiter("api", lim)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		api.Allow(context.Background(), "user:42")
	}

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	printSums(rm, "ratekit.decisions")
	// Output:
	// ratekit.decisions ratekit.algorithm=tokenbucket,ratekit.limiter.name=api,ratekit.outcome=allowed,ratekit.store=memory = 2
	// ratekit.decisions ratekit.algorithm=tokenbucket,ratekit.limiter.name=api,ratekit.outcome=denied,ratekit.store=memory = 1
}

// A limiter wrapped in a failure policy and a deny cache: the telemetry
// looks through both, for the algorithm and store behind them, the
// failure policy's state and the cache's hits.
func ExampleTelemetry_Limiter() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{MeterProvider: mp})

	mem, _ := memory.New()
	defer mem.Close()
	store, _ := tel.Store(mem)
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Minute})
	safe, _ := failsafe.New(failsafe.Config{Limiter: lim, Mode: failsafe.FailOpen})
	cached, err := denycache.New(safe)
	if err != nil {
		panic(err)
	}
	api, err := tel.Limiter("api", cached)
	if err != nil {
		panic(err)
	}
	defer api.Close() // stops observing the failure policy and the cache
	for i := 0; i < 4; i++ {
		api.Allow(context.Background(), "user:42") // allowed, denied, then 2 denials from the cache
	}
	fmt.Println(api.Name(), api.Algorithm(), api.StoreName())

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	printSums(rm, "ratekit.failsafe.state", "ratekit.denycache.hits")
	// Output:
	// api tokenbucket memory
	// ratekit.denycache.hits ratekit.algorithm=tokenbucket,ratekit.limiter.name=api,ratekit.store=memory = 2
	// ratekit.failsafe.state ratekit.failsafe.state=down,ratekit.limiter.name=api = 0
	// ratekit.failsafe.state ratekit.failsafe.state=probing,ratekit.limiter.name=api = 0
	// ratekit.failsafe.state ratekit.failsafe.state=up,ratekit.limiter.name=api = 1
}

// Every store call is measured, by script: here 2 decisions and a Reset.
func ExampleTelemetry_Store() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{MeterProvider: mp})

	mem, _ := memory.New()
	defer mem.Close()
	store, err := tel.Store(mem)
	if err != nil {
		panic(err)
	}
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Minute})
	ctx := context.Background()
	lim.Allow(ctx, "user:42")
	lim.Allow(ctx, "user:42")
	lim.Reset(ctx, "user:42")

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	m, _ := find(rm, "ratekit.store.duration")
	var lines []string
	for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		lines = append(lines, fmt.Sprintf("%s: %d calls", attrs(p.Attributes), p.Count))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// ratekit.script=reset,ratekit.store.operation=run_script,ratekit.store=memory: 1 calls
	// ratekit.script=tokenbucket,ratekit.store.operation=run_script,ratekit.store=memory: 2 calls
}

// A decision is a span in the caller's trace, and its store call a child
// span. A span recorder stands for the exporter here.
func Example_tracing() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	tel, _ := otelratekit.New(otelratekit.Config{TracerProvider: tp})

	mem, _ := memory.New()
	defer mem.Close()
	store, _ := tel.Store(mem)
	lim, _ := tokenbucket.New(store, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Minute})
	api, _ := tel.Limiter("api", lim)

	ctx, request := tp.Tracer("app").Start(context.Background(), "GET /items")
	api.Allow(ctx, "user:42")
	request.End()

	names := map[string]string{} // span ID -> name
	for _, s := range spans.Ended() {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range spans.Ended() {
		if parent, ok := names[s.Parent().SpanID().String()]; ok {
			fmt.Printf("%s in %s\n", s.Name(), parent)
		}
	}
	// Output:
	// ratekit.store.RunScript in ratekit.AllowN
	// ratekit.AllowN in GET /items
}

// error.type names an error by its kind, never by its text.
func ExampleErrorType() {
	err := fmt.Errorf("%w: dial tcp: %w", core.ErrStore, context.DeadlineExceeded)
	fmt.Println(otelratekit.ErrorType(err))
	fmt.Println(otelratekit.ErrorType(core.ErrInvalidKey))
	fmt.Println(otelratekit.ErrorType(errors.New("anything else")))
	// Output:
	// timeout
	// invalid_key
	// _OTHER
}
