package otelratekit

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every meter and tracer this
// package uses.
const ScopeName = "github.com/ratekit/ratekit/otelratekit"

// Config says where the metrics and spans go.
type Config struct {
	// MeterProvider makes the instruments; nil means OpenTelemetry's
	// global provider (otel.GetMeterProvider), which records nothing until
	// the program sets one.
	MeterProvider metric.MeterProvider
	// TracerProvider makes the spans; nil means OpenTelemetry's global
	// provider (otel.GetTracerProvider). To trace nothing while a global
	// provider is set, give go.opentelemetry.io/otel/trace/noop's
	// NewTracerProvider().
	TracerProvider trace.TracerProvider
}

// Telemetry holds the instruments and the tracer that the stores and
// limiters it wraps report to. Make one per program (or per meter
// provider) with New and wrap every store and limiter with it. It is safe
// for concurrent use. A zero Telemetry wraps nothing: its methods return
// an error wrapping core.ErrInvalidConfig, as do the calls of a zero
// Limiter, Concurrency or Store (a Store's wrapping core.ErrStore too).
type Telemetry struct {
	tracer trace.Tracer
	meter  metric.Meter
	// now measures store calls; time.Now outside tests.
	now func() time.Time

	decisions     metric.Int64Counter
	storeDuration metric.Float64Histogram
	storeErrors   metric.Int64Counter
	failsafeState metric.Int64ObservableGauge
	denyHits      metric.Int64ObservableCounter
	leases        metric.Int64UpDownCounter
	// limitDecisions counts each limit's part of a policy's decisions.
	limitDecisions metric.Int64Counter
}

// storeBuckets are ratekit.store.duration's bucket boundaries, in seconds:
// from a memory store's microseconds past a Redis round trip to a timeout.
var storeBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// New makes the instruments. An error comes from the meter provider.
func New(cfg Config) (*Telemetry, error) {
	mp, tp := cfg.MeterProvider, cfg.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	t := &Telemetry{
		tracer: tp.Tracer(ScopeName),
		meter:  mp.Meter(ScopeName),
		now:    time.Now,
	}
	var err error
	if t.decisions, err = t.meter.Int64Counter("ratekit.decisions",
		metric.WithUnit("{decision}"),
		metric.WithDescription("Rate-limit decisions, by outcome: allowed, denied or error.")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.decisions: %w", err)
	}
	if t.storeDuration, err = t.meter.Float64Histogram("ratekit.store.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of the calls to a limiter's store: one script, or one pipelined batch."),
		metric.WithExplicitBucketBoundaries(storeBuckets...)); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.store.duration: %w", err)
	}
	if t.storeErrors, err = t.meter.Int64Counter("ratekit.store.errors",
		metric.WithUnit("{error}"),
		metric.WithDescription("Failed calls to a limiter's store.")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.store.errors: %w", err)
	}
	if t.failsafeState, err = t.meter.Int64ObservableGauge("ratekit.failsafe.state",
		metric.WithUnit("{state}"),
		metric.WithDescription("1 for the state a failsafe limiter's store is in (up, down, probing), 0 for the others.")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.failsafe.state: %w", err)
	}
	if t.denyHits, err = t.meter.Int64ObservableCounter("ratekit.denycache.hits",
		metric.WithUnit("{hit}"),
		metric.WithDescription("Denials a deny cache answered without asking the store.")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.denycache.hits: %w", err)
	}
	if t.leases, err = t.meter.Int64UpDownCounter("ratekit.concurrency.leases",
		metric.WithUnit("{lease}"),
		metric.WithDescription("Leases of a concurrency limiter this process holds: acquired and not yet released.")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.concurrency.leases: %w", err)
	}
	if t.limitDecisions, err = t.meter.Int64Counter("ratekit.policy.limit.decisions",
		metric.WithUnit("{decision}"),
		metric.WithDescription("Each limit's part in a policy's decisions, by outcome: allowed (and counted), denied, not_counted (would have allowed, but another limit or a penalty denied the request), or shadow (a shadow limit that would have denied).")); err != nil {
		return nil, fmt.Errorf("otelratekit: ratekit.policy.limit.decisions: %w", err)
	}
	return t, nil
}
