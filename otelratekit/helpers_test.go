package otelratekit_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/otelratekit"
	"github.com/ratekit/ratekit/store/memory"
)

// rig is a Telemetry on the real OpenTelemetry SDK: a manual metric
// reader and a span recorder.
type rig struct {
	tel    *otelratekit.Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() {
		mp.Shutdown(context.Background())
		r.tp.Shutdown(context.Background())
	})
	tel, err := otelratekit.New(otelratekit.Config{MeterProvider: mp, TracerProvider: r.tp})
	if err != nil {
		t.Fatal(err)
	}
	r.tel = tel
	return r
}

// collect reads every metric now.
func (r *rig) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the metric named name, and whether it was collected.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// attrs writes an attribute set as "k=v,k=v", sorted by key.
func attrs(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// ints returns the int64 points of a counter or gauge named name, by their
// attributes; nil when the metric was not collected.
func (r *rig) ints(t *testing.T, name string) map[string]int64 {
	t.Helper()
	m, ok := find(r.collect(t), name)
	if !ok {
		return nil
	}
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[attrs(p.Attributes)] = p.Value
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[attrs(p.Attributes)] = p.Value
		}
	default:
		t.Fatalf("%s is a %T", name, m.Data)
	}
	return out
}

// hist is one histogram point: its count, sum and bucket counts.
type hist struct {
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64
}

// hists returns the points of the histogram named name, by attributes.
func (r *rig) hists(t *testing.T, name string) map[string]hist {
	t.Helper()
	m, ok := find(r.collect(t), name)
	if !ok {
		return nil
	}
	d, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T", name, m.Data)
	}
	out := map[string]hist{}
	for _, p := range d.DataPoints {
		out[attrs(p.Attributes)] = hist{p.Count, p.Sum, p.Bounds, p.BucketCounts}
	}
	return out
}

// everyAttributeValue returns every attribute value of every metric point
// collected now and every span recorded so far.
func (r *rig) everyAttributeValue(t *testing.T) []string {
	var vals []string
	add := func(s attribute.Set) {
		for _, a := range s.ToSlice() {
			vals = append(vals, a.Value.Emit())
		}
	}
	for _, sm := range r.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(p.Attributes)
				}
			default:
				t.Fatalf("%s: unexpected %T", m.Name, m.Data)
			}
		}
	}
	for _, s := range r.spans.Ended() {
		for _, a := range s.Attributes() {
			vals = append(vals, a.Value.Emit())
		}
	}
	return vals
}

// stepClock returns a clock that moves forward by step at each reading.
func stepClock(step time.Duration) func() time.Time {
	now := time.Unix(1000, 0)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// bucket returns a token bucket of capacity on a memory store wrapped in
// an otelratekit.Store, and that Store.
func (r *rig) bucket(t *testing.T, capacity int64) (*ratekit.Limiter, *otelratekit.Store) {
	t.Helper()
	mem, clock := newMemory(t)
	store, err := r.tel.Store(mem)
	if err != nil {
		t.Fatal(err)
	}
	return tokenBucket(t, store, clock, capacity), store
}

// newMemory returns a memory store on a manual clock.
func newMemory(t *testing.T) (*memory.Store, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mem, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	return mem, clock
}

// tokenBucket returns a token bucket of capacity, refilled by 1 an hour,
// on store at clock's time.
func tokenBucket(t *testing.T, store core.ScriptRunner, clock *fakeclock.Clock, capacity int64) *ratekit.Limiter {
	t.Helper()
	lim, err := tokenbucket.New(store, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// failing is a store whose every call fails with err.
type failing struct{ err error }

func (f failing) RunScript(context.Context, *core.Script, []string, []int64, []int64) ([]int64, error) {
	return nil, f.err
}

func (failing) StoreName() string { return "failing" }

// batching is a memory store that runs batches (core.BatchRunner), one
// call after another, and counts them.
type batching struct {
	*memory.Store
	batches int
}

// oneNode is a batching store that says whether it is one node.
type oneNode struct {
	*batching
	one bool
}

func (o *oneNode) SingleNode() bool { return o.one }

func (b *batching) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	b.batches++
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply, out[i].Err = b.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

func key(kv ...string) string {
	if len(kv)%2 != 0 {
		panic(fmt.Sprint("odd key-value list ", kv))
	}
	var parts []string
	for i := 0; i < len(kv); i += 2 {
		parts = append(parts, kv[i]+"="+kv[i+1])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
