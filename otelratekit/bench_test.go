package otelratekit_test

import (
	"context"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// BenchmarkAllowN measures what the telemetry adds to a decision on the
// memory store (the cheapest store, so the overhead shows most): none,
// no-op providers, the SDK's metrics, and the SDK's metrics and traces
// (every span sampled and dropped).
func BenchmarkAllowN(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  *otelratekit.Config
	}{
		{"bare", nil},
		{"noop", &otelratekit.Config{MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}},
		{"metrics", &otelratekit.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), TracerProvider: tracenoop.NewTracerProvider()}},
		{"metrics+traces", &otelratekit.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), TracerProvider: sdktrace.NewTracerProvider()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mem, _ := memory.New()
			defer mem.Close()
			var store core.ScriptRunner = mem
			var tel *otelratekit.Telemetry
			if bc.cfg != nil {
				var err error
				if tel, err = otelratekit.New(*bc.cfg); err != nil {
					b.Fatal(err)
				}
				if store, err = tel.Store(mem); err != nil {
					b.Fatal(err)
				}
			}
			tb, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 1 << 30, RefillRate: 1 << 30, RefillInterval: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			var lim core.Limiter = tb
			if tel != nil {
				if lim, err = tel.Limiter("bench", tb); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lim.AllowN(ctx, "user:42", 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
