package otelratekit

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratekit/ratekit/core"
)

// Store is a core.ScriptRunner that reports every call to the store it
// wraps: its duration (ratekit.store.duration), its failures
// (ratekit.store.errors) and a span, a child of the decision's. Build
// limiters on it as on the store itself. It is safe for concurrent use.
// The zero Store, and a nil *Store, run nothing: every call fails with an
// error wrapping core.ErrStore, and StoreName is "", so that limiters
// refuse it when they are built.
//
// It holds the store in a field and forwards what it supports of the
// store contract (core/store.go): batches (core.BatchRunner; one call at
// a time when the store has none), whether the store is one node
// (core.SingleNode) and its name (core.StoreNamer). It keeps nothing of a
// call's keys. It is not a core.LocalStore, even around the memory store:
// limiters on it run every call as a script (RunScript), so that every
// call is seen, measured at what it costs through a script.
type Store struct {
	t     *Telemetry
	next  core.ScriptRunner
	batch core.BatchRunner // next, when it runs batches
	name  string
	// batchAttrs are the duration's attributes for a batch; scripts holds
	// those of each script run, a []metric.RecordOption by *core.Script,
	// made on its first run.
	batchAttrs attribute.Set
	scripts    sync.Map
}

// clientSpan starts every store span.
var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

var (
	_ core.BatchRunner = (*Store)(nil)
	_ core.StoreNamer  = (*Store)(nil)
	_ core.SingleNode  = (*Store)(nil)
)

// Store wraps the store next. An error wraps core.ErrInvalidConfig: next
// is nil, or cannot run scripts (a store whose core.StoreNamer name is
// "": a nil or zero value of a ratekit store, not built by its New).
func (t *Telemetry) Store(next core.ScriptRunner) (*Store, error) {
	if !t.built() {
		return nil, errZeroTelemetry
	}
	if next == nil {
		return nil, fmt.Errorf("%w: otelratekit: the store is nil", core.ErrInvalidConfig)
	}
	if n, ok := next.(core.StoreNamer); ok && n.StoreName() == "" {
		return nil, fmt.Errorf("%w: otelratekit: the store is a nil or zero %T, not built by its New", core.ErrInvalidConfig, next)
	}
	s := &Store{t: t, next: next, name: storeName(next)}
	s.batch, _ = next.(core.BatchRunner)
	s.batchAttrs = attribute.NewSet(AttrStore.String(s.name), AttrStoreOperation.String("run_scripts"))
	return s, nil
}

// storeName is r's core.StoreNamer name, or Other.
func storeName(r core.ScriptRunner) string {
	if n, ok := r.(core.StoreNamer); ok {
		if name := n.StoreName(); name != "" {
			return name
		}
	}
	return Other
}

// StoreName returns the wrapped store's name (core.StoreNamer), or
// "other" when it has none; "" for a Store its Telemetry did not build,
// so that limiters refuse it when they are built.
func (s *Store) StoreName() string {
	if !s.built() {
		return ""
	}
	return s.name
}

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() core.ScriptRunner {
	if s == nil {
		return nil
	}
	return s.next
}

// SingleNode reports whether the wrapped store is one node on which a
// script's keys may span cluster slots (core.SingleNode), so that limiters
// on s batch as they would on the store; false when it cannot tell.
func (s *Store) SingleNode() bool {
	sn, ok := s.Unwrap().(core.SingleNode)
	return ok && sn.SingleNode()
}

// RunScript runs the script on the wrapped store, in a span, and records
// its duration and its error.
func (s *Store) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if !s.built() {
		return nil, errZeroStore
	}
	ctx, span := s.t.tracer.Start(ctx, "ratekit.store.RunScript", clientSpan...)
	start := s.t.now()
	reply, err := s.next.RunScript(ctx, sc, keys, args, reply)
	elapsed := s.t.now().Sub(start).Seconds()

	name := sc.Name()
	if err == nil {
		s.t.storeDuration.Record(ctx, elapsed, s.scriptAttrs(sc)...)
	} else {
		attrs := metric.WithAttributes(AttrStore.String(s.name), AttrStoreOperation.String("run_script"), AttrScript.String(name), AttrErrorType.String(ErrorType(err)))
		s.t.storeDuration.Record(ctx, elapsed, attrs)
		s.t.storeErrors.Add(ctx, 1, attrs)
	}
	if span.IsRecording() {
		span.SetAttributes(AttrStore.String(s.name), AttrScript.String(name))
		if err != nil {
			failSpan(span, err)
		}
	}
	span.End()
	return reply, err
}

// scriptAttrs returns the attributes of a successful run of sc, made once
// per script (scripts are package variables, few and long-lived), in a
// slice that Record takes as it is.
func (s *Store) scriptAttrs(sc *core.Script) []metric.RecordOption {
	if o, ok := s.scripts.Load(sc); ok {
		return o.([]metric.RecordOption)
	}
	o := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(AttrStore.String(s.name), AttrStoreOperation.String("run_script"), AttrScript.String(sc.Name())))}
	s.scripts.Store(sc, o)
	return o
}

// RunScripts runs the calls on the wrapped store in one batch when it runs
// batches (one span and one duration for the batch, one error for each
// call that failed), and one RunScript at a time otherwise.
func (s *Store) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	if !s.built() {
		out := make([]core.ScriptResult, len(calls))
		for i := range out {
			out[i].Err = errZeroStore
		}
		return out
	}
	if s.batch == nil {
		out := make([]core.ScriptResult, len(calls))
		for i, c := range calls {
			out[i].Reply, out[i].Err = s.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
		}
		return out
	}
	ctx, span := s.t.tracer.Start(ctx, "ratekit.store.RunScripts", clientSpan...)
	start := s.t.now()
	out := s.batch.RunScripts(ctx, calls)
	s.t.storeDuration.Record(ctx, s.t.now().Sub(start).Seconds(), metric.WithAttributeSet(s.batchAttrs))
	failed := 0
	var firstErr error
	for i, r := range out {
		if r.Err == nil {
			continue
		}
		failed++
		if firstErr == nil {
			firstErr = r.Err
		}
		script := Other
		if i < len(calls) && calls[i].Script != nil {
			script = calls[i].Script.Name()
		}
		s.t.storeErrors.Add(ctx, 1, metric.WithAttributes(AttrStore.String(s.name), AttrStoreOperation.String("run_scripts"), AttrScript.String(script), AttrErrorType.String(ErrorType(r.Err))))
	}
	if span.IsRecording() {
		span.SetAttributes(AttrStore.String(s.name), AttrBatchSize.Int(len(calls)))
		if failed > 0 {
			span.SetAttributes(attribute.Int("ratekit.batch.failed", failed))
			failSpan(span, firstErr)
		}
	}
	span.End()
	return out
}

// failSpan marks span as failed by err: its status, error.type, and the
// error as an event.
func failSpan(span trace.Span, err error) {
	span.SetAttributes(AttrErrorType.String(ErrorType(err)))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
