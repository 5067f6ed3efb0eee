package otelratekit

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/callcheck"
	"github.com/ratekit/ratekit/internal/typednil"
)

// Limiter is a core.Limiter that reports every decision of the limiter it
// wraps (ratekit.decisions) and makes a span of every call, a child of the
// span in the caller's context. It is safe for concurrent use.
type Limiter struct {
	t    *Telemetry
	next core.Limiter
	many batcher // next, when it decides batches itself
	reg  metric.Registration

	name, algorithm, store string
	// spanAttrs are set on every span; allowed and denied add a decision
	// of that outcome to the decision counter.
	spanAttrs       []attribute.KeyValue
	allowed, denied []metric.AddOption
	// start starts every span: with spanAttrs, made once.
	start []trace.SpanStartOption
}

var _ core.Limiter = (*Limiter)(nil)

// batcher is a limiter that decides many requests in one call, as
// ratekit.Limiter does.
type batcher interface {
	AllowMany(ctx context.Context, reqs []core.Request) []core.Result
}

// described is a ratekit limiter: it says its algorithm and its store.
type described interface {
	Algorithm() string
	Store() core.ScriptRunner
}

// unwrapper is a limiter that wraps another (failsafe, denycache, Limiter).
type unwrapper interface {
	Unwrap() core.Limiter
}

// maxChain bounds the walk through wrapped limiters, in case of a cycle.
const maxChain = 32

// Limiter wraps next, a limiter named name. The name is the
// ratekit.limiter.name of its metrics and spans: printable ASCII, 1 to 64
// bytes, fixed by the program (never a key). Limiters with the same name
// add up in the same series. The algorithm and store come from the
// ratekit limiter found behind next's wrappers ("other" when there is
// none); the failsafe limiters and deny caches found on the way are
// observed too (see the package doc) until Close. An error wraps
// core.ErrInvalidConfig.
func (t *Telemetry) Limiter(name string, next core.Limiter) (*Limiter, error) {
	if !t.built() {
		return nil, errZeroTelemetry
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%w: otelratekit: limiter name %q: %w", core.ErrInvalidConfig, name, err)
	}
	if next == nil {
		return nil, fmt.Errorf("%w: otelratekit: limiter %q is nil", core.ErrInvalidConfig, name)
	}
	if typednil.Is(next) {
		return nil, fmt.Errorf("%w: otelratekit: limiter %q is a nil %T", core.ErrInvalidConfig, name, next)
	}
	if callcheck.Unbuilt(next) {
		return nil, fmt.Errorf("%w: otelratekit: limiter %q is a %T around nothing: a zero limiter, or a wrapper of one, not built by its New", core.ErrInvalidConfig, name, next)
	}
	algorithm, store := Other, Other
	var obs observed
	cur := next
	for range maxChain {
		obs.add(cur)
		if d, ok := cur.(described); ok {
			// callcheck.Unbuilt refused a limiter without a store above.
			algorithm, store = d.Algorithm(), storeName(d.Store())
			break
		}
		u, ok := cur.(unwrapper)
		if !ok {
			break
		}
		if cur = u.Unwrap(); cur == nil {
			break
		}
	}
	l := t.newLimiter(name, next, algorithm, store)
	l.many, _ = next.(batcher)
	reg, err := obs.register(t, l)
	if err != nil {
		return nil, fmt.Errorf("otelratekit: limiter %q: %w", name, err)
	}
	l.reg = reg
	return l, nil
}

// newLimiter returns a Limiter around next with its attributes made.
func (t *Telemetry) newLimiter(name string, next core.Limiter, algorithm, store string) *Limiter {
	l := &Limiter{t: t, next: next, name: name, algorithm: algorithm, store: store}
	l.spanAttrs = []attribute.KeyValue{AttrLimiterName.String(name), AttrAlgorithm.String(algorithm), AttrStore.String(store)}
	l.start = []trace.SpanStartOption{trace.WithAttributes(l.spanAttrs...)}
	l.allowed = []metric.AddOption{metric.WithAttributeSet(l.decisionSet(OutcomeAllowed, ""))}
	l.denied = []metric.AddOption{metric.WithAttributeSet(l.decisionSet(OutcomeDenied, ""))}
	return l
}

// checkName accepts a name that is printable ASCII, 1 to 64 bytes.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty")
	}
	if len(name) > 64 {
		return errors.New("longer than 64 bytes")
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("byte %#x is not printable ASCII", name[i])
		}
	}
	return nil
}

// decisionSet is the decision counter's attributes for an outcome (and an
// error type, for errors).
func (l *Limiter) decisionSet(outcome, errType string) attribute.Set {
	kv := append(l.spanAttrs[:len(l.spanAttrs):len(l.spanAttrs)], AttrOutcome.String(outcome))
	if errType != "" {
		kv = append(kv, AttrErrorType.String(errType))
	}
	return attribute.NewSet(kv...)
}

// Name returns the limiter's name, its ratekit.limiter.name.
func (l *Limiter) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Algorithm returns the algorithm of the ratekit limiter behind l, or
// "other".
func (l *Limiter) Algorithm() string {
	if l == nil {
		return ""
	}
	return l.algorithm
}

// StoreName returns the name of the store behind l, or "other".
func (l *Limiter) StoreName() string {
	if l == nil {
		return ""
	}
	return l.store
}

// Unwrap returns the wrapped limiter.
func (l *Limiter) Unwrap() core.Limiter {
	if l == nil {
		return nil
	}
	return l.next
}

// Close stops observing the failsafe limiters and deny caches behind l;
// decisions are still counted. Close a Limiter you stop using, so that the
// meter provider forgets it.
func (l *Limiter) Close() error {
	if l == nil || l.reg == nil {
		return nil
	}
	return l.reg.Unregister()
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN asks the wrapped limiter, in a span "ratekit.AllowN", and counts
// the decision.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	if !l.built() {
		return core.Decision{}, errZero
	}
	ctx, span := l.t.tracer.Start(ctx, "ratekit.AllowN", l.start...)
	d, err := l.next.AllowN(ctx, key, n)
	l.count(ctx, d, err)
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(n))
		endDecision(span, d, err)
	}
	span.End()
	return d, err
}

// count adds one decision to ratekit.decisions.
func (l *Limiter) count(ctx context.Context, d core.Decision, err error) {
	switch {
	case err != nil:
		l.t.decisions.Add(ctx, 1, metric.WithAttributeSet(l.decisionSet(OutcomeError, ErrorType(err))))
	case d.Allowed:
		l.t.decisions.Add(ctx, 1, l.allowed...)
	default:
		l.t.decisions.Add(ctx, 1, l.denied...)
	}
}

// endDecision sets a decision span's outcome attributes, or its error.
func endDecision(span trace.Span, d core.Decision, err error) {
	if err != nil {
		span.SetAttributes(AttrOutcome.String(OutcomeError))
		failSpan(span, err)
		return
	}
	outcome := OutcomeAllowed
	if !d.Allowed {
		outcome = OutcomeDenied
	}
	span.SetAttributes(AttrOutcome.String(outcome), AttrLimit.Int64(d.Limit), AttrRemaining.Int64(d.Remaining), AttrRetryAfter.Float64(d.RetryAfter.Seconds()))
}

// Peek asks the wrapped limiter, in a span "ratekit.Peek"; a Peek is not
// a decision and is not counted.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	if !l.built() {
		return core.Decision{}, errZero
	}
	ctx, span := l.t.tracer.Start(ctx, "ratekit.Peek", l.start...)
	d, err := l.next.Peek(ctx, key)
	if span.IsRecording() {
		endDecision(span, d, err)
	}
	span.End()
	return d, err
}

// Reset resets key in the wrapped limiter, in a span "ratekit.Reset".
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if !l.built() {
		return errZero
	}
	ctx, span := l.t.tracer.Start(ctx, "ratekit.Reset", l.start...)
	err := l.next.Reset(ctx, key)
	if err != nil && span.IsRecording() {
		failSpan(span, err)
	}
	span.End()
	return err
}

// AllowMany decides every request, in one span "ratekit.AllowMany", and
// counts each decision: in one call when the wrapped limiter has
// AllowMany (as ratekit.Limiter does), by AllowN one request at a time
// otherwise.
func (l *Limiter) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	if !l.built() {
		out := make([]core.Result, len(reqs))
		for i := range out {
			out[i].Err = errZero
		}
		return out
	}
	ctx, span := l.t.tracer.Start(ctx, "ratekit.AllowMany", l.start...)
	var out []core.Result
	if l.many != nil {
		out = l.many.AllowMany(ctx, reqs)
	} else {
		out = make([]core.Result, len(reqs))
		for i, r := range reqs {
			out[i].Decision, out[i].Err = l.next.AllowN(ctx, r.Key, r.N)
		}
	}
	var allowed, denied, failed int64
	var firstErr error
	for _, r := range out {
		switch {
		case r.Err != nil:
			failed++
			if firstErr == nil {
				firstErr = r.Err
			}
			l.count(ctx, r.Decision, r.Err)
		case r.Decision.Allowed:
			allowed++
		default:
			denied++
		}
	}
	if allowed > 0 {
		l.t.decisions.Add(ctx, allowed, l.allowed...)
	}
	if denied > 0 {
		l.t.decisions.Add(ctx, denied, l.denied...)
	}
	if span.IsRecording() {
		span.SetAttributes(AttrBatchSize.Int(len(reqs)),
			attribute.Int64("ratekit.batch.allowed", allowed),
			attribute.Int64("ratekit.batch.denied", denied),
			attribute.Int64("ratekit.batch.failed", failed))
		if firstErr != nil {
			failSpan(span, firstErr)
		}
	}
	span.End()
	return out
}
