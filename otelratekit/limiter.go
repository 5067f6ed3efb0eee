package otelratekit

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// Limiter is a core.Limiter that reports every decision of the limiter it
// wraps (ratekit.decisions; for a policy, each limit's part in
// ratekit.policy.limit.decisions too) and makes a span of every call, a
// child of the span in the caller's context. It decides as the wrapped
// limiter does, so it goes wherever that one would (httplimit,
// grpclimit, failsafe, ...). It is safe for concurrent use. The zero
// Limiter, and a nil *Limiter, cannot decide: every call returns an error
// wrapping core.ErrInvalidConfig, and MaxCost returns 0.
type Limiter struct {
	t    *Telemetry
	next core.Limiter
	many batcher // next, when it decides batches itself
	reg  metric.Registration

	name, algorithm, store string
	// spanAttrs are set on every span; allowed, denied, shadow and blocked
	// add a decision of that outcome to the decision counter.
	spanAttrs                        []attribute.KeyValue
	allowed, denied, shadow, blocked []metric.AddOption
	// limits are the attributes of each limit's part, by the limit's name,
	// for the policy behind next; nil when there is none.
	limits map[string]*limitOpts
	// start starts every span: with spanAttrs, made once.
	start []trace.SpanStartOption
}

var _ core.Limiter = (*Limiter)(nil)

// limitOpts are one limit's attributes in ratekit.policy.limit.decisions,
// one set per outcome.
type limitOpts struct {
	allowed, denied, notCounted, shadow []metric.AddOption
}

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

// Limiter wraps next, any limiter (an algorithm's, a policy, a wrapper of
// one), named name. The name is the ratekit.limiter.name of its metrics
// and spans: printable ASCII, 1 to 64 bytes, fixed by the program (never a
// key). Limiters with the same name add up in the same series. The
// algorithm and store come from the ratekit limiter found behind next's
// wrappers ("policy" for a policy; "other" when there is none), and so do
// the algorithms of a policy's limits; the failsafe limiters and deny
// caches found on the way are observed too (see the package doc) until
// Close. An error wraps core.ErrInvalidConfig: for a bad name, or a next
// that cannot decide (nil, or whose MaxCost is below 1: not built by its
// New, or a wrapper of such a limiter).
func (t *Telemetry) Limiter(name string, next core.Limiter) (*Limiter, error) {
	if !t.built() {
		return nil, errZeroTelemetry
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%w: otelratekit: limiter name %q: %w", core.ErrInvalidConfig, name, err)
	}
	if next == nil || next.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: otelratekit: limiter %q cannot decide (nil, or not built by its New)", core.ErrInvalidConfig, name)
	}
	algorithm, store := Other, Other
	var limits map[string]string // a policy's limits' algorithms, by name
	var obs observed
	cur := next
	for range maxChain {
		obs.add(cur)
		if d, ok := cur.(described); ok {
			algorithm, store = d.Algorithm(), storeName(d.Store())
			limits = policyLimits(cur)
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
	if limits != nil {
		l.limits = make(map[string]*limitOpts, len(limits))
		for limit, alg := range limits {
			l.limits[limit] = l.newLimitOpts(limit, alg)
		}
	}
	l.many, _ = next.(batcher)
	reg, err := obs.register(t, l)
	if err != nil {
		return nil, fmt.Errorf("otelratekit: limiter %q: %w", name, err)
	}
	l.reg = reg
	return l, nil
}

// policyLimits returns the algorithm of each limit of lim, by the limit's
// name, when lim is a policy (ratekit.NewPolicy); nil otherwise.
func policyLimits(lim core.Limiter) map[string]string {
	rl, ok := lim.(*ratekit.Limiter)
	if !ok {
		return nil
	}
	e := engine.Of(rl)
	if !e.Policy() {
		return nil
	}
	out := map[string]string{}
	for _, el := range e.Limits() {
		out[el.Name] = el.Spec.Name
	}
	return out
}

// newLimiter returns a Limiter around next with its attributes made.
func (t *Telemetry) newLimiter(name string, next core.Limiter, algorithm, store string) *Limiter {
	l := &Limiter{t: t, next: next, name: name, algorithm: algorithm, store: store}
	l.spanAttrs = []attribute.KeyValue{AttrLimiterName.String(name), AttrAlgorithm.String(algorithm), AttrStore.String(store)}
	l.start = []trace.SpanStartOption{trace.WithAttributes(l.spanAttrs...)}
	set := func(kv ...attribute.KeyValue) []metric.AddOption {
		all := append(l.spanAttrs[:len(l.spanAttrs):len(l.spanAttrs)], kv...)
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(all...))}
	}
	l.allowed = set(AttrOutcome.String(OutcomeAllowed))
	l.denied = set(AttrOutcome.String(OutcomeDenied))
	l.shadow = set(AttrOutcome.String(OutcomeShadow))
	l.blocked = set(AttrOutcome.String(OutcomeDenied), AttrBlocked.Bool(true))
	return l
}

// newLimitOpts returns the attributes of the part of the policy's limit
// named limit, of algorithm, in ratekit.policy.limit.decisions.
func (l *Limiter) newLimitOpts(limit, algorithm string) *limitOpts {
	set := func(outcome string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
			AttrLimiterName.String(l.name), AttrLimitName.String(limit), AttrAlgorithm.String(algorithm),
			AttrStore.String(l.store), AttrOutcome.String(outcome)))}
	}
	return &limitOpts{allowed: set(OutcomeAllowed), denied: set(OutcomeDenied), notCounted: set(OutcomeNotCounted), shadow: set(OutcomeShadow)}
}

// checkName accepts a name that is printable ASCII, 1 to 64 bytes: a
// name the rate-limit fields could carry.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty")
	}
	return ratelimitfield.CheckName(name)
}

// Name returns the limiter's name, its ratekit.limiter.name.
func (l *Limiter) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Algorithm returns the algorithm of the ratekit limiter behind l,
// "policy" for a policy, or "other".
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

// MaxCost returns the wrapped limiter's MaxCost; 0 for a Limiter its
// Telemetry did not build.
func (l *Limiter) MaxCost() int64 {
	if !l.built() {
		return 0
	}
	return l.next.MaxCost()
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
// the decision (and, for a policy, each limit's part).
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n})
}

// Decide asks the wrapped limiter as the request's Op says, in the span
// and with the counts of the method it stands for: AllowN's for OpAllow,
// Peek's for OpPeek, Refund's for OpRefund. A decision made with the
// request's own Params reports their Limit, which the span records.
func (l *Limiter) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if !l.built() {
		return core.Decision{}, errZero
	}
	switch r.Op {
	case core.OpPeek:
		return l.peek(ctx, r)
	case core.OpRefund:
		return l.refund(ctx, r)
	}
	ctx, span := l.t.tracer.Start(ctx, "ratekit.AllowN", l.start...)
	d, err := l.next.Decide(ctx, r)
	l.count(ctx, d, err)
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(r.N))
		endDecision(span, d, err)
	}
	span.End()
	return d, err
}

// outcome is the ratekit.outcome of a decision made without error.
func outcome(d core.Decision) string {
	switch {
	case !d.Allowed:
		return OutcomeDenied
	case d.DeniedBy(true) != nil:
		return OutcomeShadow
	}
	return OutcomeAllowed
}

// count adds one decision to ratekit.decisions and, for a policy's, each
// limit's part to ratekit.policy.limit.decisions.
func (l *Limiter) count(ctx context.Context, d core.Decision, err error) {
	t := l.t
	switch {
	case err != nil:
		t.decisions.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(append(l.spanAttrs[:len(l.spanAttrs):len(l.spanAttrs)],
			AttrOutcome.String(OutcomeError), AttrErrorType.String(ErrorType(err)))...)))
		return
	case !d.Allowed && d.Blocked:
		t.decisions.Add(ctx, 1, l.blocked...)
	case !d.Allowed:
		t.decisions.Add(ctx, 1, l.denied...)
	case d.DeniedBy(true) != nil:
		t.decisions.Add(ctx, 1, l.shadow...)
	default:
		t.decisions.Add(ctx, 1, l.allowed...)
	}
	for _, ld := range d.Limits {
		o := l.limits[ld.Name]
		if o == nil {
			// A limit the policy found behind next did not name (a
			// policy of another kind, a local one of failsafe's).
			o = l.newLimitOpts(ld.Name, Other)
		}
		switch {
		case !ld.Allowed && ld.Shadow:
			t.limitDecisions.Add(ctx, 1, o.shadow...)
		case !ld.Allowed:
			t.limitDecisions.Add(ctx, 1, o.denied...)
		case d.Allowed:
			t.limitDecisions.Add(ctx, 1, o.allowed...)
		default:
			// It would have allowed; another limit, or a penalty block,
			// denied the request, so it counted nothing.
			t.limitDecisions.Add(ctx, 1, o.notCounted...)
		}
	}
}

// endDecision sets a decision span's outcome attributes, or its error;
// for a policy's decision, also the limits that denied it and those in
// shadow that would have.
func endDecision(span trace.Span, d core.Decision, err error) {
	if err != nil {
		span.SetAttributes(AttrOutcome.String(OutcomeError))
		failSpan(span, err)
		return
	}
	span.SetAttributes(AttrOutcome.String(outcome(d)), AttrLimit.Int64(d.Limit), AttrRemaining.Int64(d.Remaining), AttrRetryAfter.Float64(d.RetryAfter.Seconds()))
	if d.Limits != nil {
		var denied, shadow []string
		for _, ld := range d.Limits {
			switch {
			case ld.Allowed:
			case ld.Shadow:
				shadow = append(shadow, ld.Name)
			default:
				denied = append(denied, ld.Name)
			}
		}
		span.SetAttributes(AttrDenied.StringSlice(denied), AttrShadowDenied.StringSlice(shadow), AttrBlocked.Bool(d.Blocked))
	}
}

// Peek asks the wrapped limiter, in a span "ratekit.Peek"; a Peek is not
// a decision and is not counted.
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: 1, Op: core.OpPeek})
}

// peek is Decide for an OpPeek request.
func (l *Limiter) peek(ctx context.Context, r core.Request) (core.Decision, error) {
	ctx, span := l.t.tracer.Start(ctx, "ratekit.Peek", l.start...)
	d, err := l.next.Decide(ctx, r)
	if span.IsRecording() {
		endDecision(span, d, err)
	}
	span.End()
	return d, err
}

// Refund gives n back to key in the wrapped limiter, in a span
// "ratekit.Refund"; a refund is not a decision and is not counted.
func (l *Limiter) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.Decide(ctx, core.Request{Key: key, N: n, Op: core.OpRefund})
}

// refund is Decide for an OpRefund request.
func (l *Limiter) refund(ctx context.Context, r core.Request) (core.Decision, error) {
	ctx, span := l.t.tracer.Start(ctx, "ratekit.Refund", l.start...)
	d, err := l.next.Decide(ctx, r)
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(r.N))
		if err != nil {
			failSpan(span, err)
		} else {
			span.SetAttributes(AttrRemaining.Int64(d.Remaining))
		}
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
// counts each decision as AllowN does: in one call when the wrapped
// limiter has AllowMany (as ratekit.Limiter does), by AllowN one request
// at a time otherwise.
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
			if r.Op != core.OpAllow {
				out[i].Err = fmt.Errorf("%w: AllowMany decides OpAllow requests, got %v: call Decide", core.ErrInvalidConfig, r.Op)
				continue
			}
			out[i].Decision, out[i].Err = l.next.Decide(ctx, r)
		}
	}
	// Plain decisions are added up, a policy's counted one by one.
	var allowed, denied, failed int64
	var sumAllowed, sumDenied int64
	var firstErr error
	for _, r := range out {
		d := r.Decision
		switch {
		case r.Err != nil:
			failed++
			if firstErr == nil {
				firstErr = r.Err
			}
			l.count(ctx, d, r.Err)
			continue
		case d.Allowed:
			allowed++
		default:
			denied++
		}
		switch {
		case d.Limits != nil || d.Blocked:
			l.count(ctx, d, nil)
		case d.Allowed:
			sumAllowed++
		default:
			sumDenied++
		}
	}
	if sumAllowed > 0 {
		l.t.decisions.Add(ctx, sumAllowed, l.allowed...)
	}
	if sumDenied > 0 {
		l.t.decisions.Add(ctx, sumDenied, l.denied...)
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
