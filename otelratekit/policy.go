package otelratekit

import (
	"context"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
)

// OutcomeShadow is the ratekit.outcome of a policy's request that was
// allowed although a shadow limit would have denied it, and of that
// shadow limit in ratekit.policy.limit.decisions.
const OutcomeShadow = "shadow"

// AttrLimitName is the name of one limit of a ratekit.Policy.
const AttrLimitName = attribute.Key("ratekit.limit.name")

// AttrBlocked marks a policy's denial made by a penalty block (true).
const AttrBlocked = attribute.Key("ratekit.blocked")

// Policy is a ratekit.Policy that reports its decisions: each request in
// ratekit.decisions (ratekit.algorithm "policy"; outcome allowed, denied,
// shadow or error; a denial by a penalty block with ratekit.blocked), and
// each of its limits' part in ratekit.policy.limit.decisions
// (ratekit.limit.name and the limit's algorithm; outcome allowed, denied,
// or shadow for a shadow limit that would have denied). Each call is a
// span ("ratekit.AllowN", "ratekit.Peek", "ratekit.Refund",
// "ratekit.Reset"). It is safe for concurrent use, and decides as the
// wrapped Policy: grpclimit.Config.Policy takes it in its place.
type Policy struct {
	l    *Limiter // the attributes, instruments and request counting
	next *ratekit.Policy
	// shadow and blocked add a request of that outcome; limits add one
	// limit's part, by the limit's name, by outcome.
	shadow, blocked []metric.AddOption
	limits          map[string]*limitOpts
}

// limitOpts are one limit's attributes in ratekit.policy.limit.decisions.
type limitOpts struct {
	allowed, denied, shadow []metric.AddOption
}

// Policy wraps next, a policy named name (see Telemetry.Limiter for
// names). Its store is its limits' store. An error wraps
// core.ErrInvalidConfig.
func (t *Telemetry) Policy(name string, next *ratekit.Policy) (*Policy, error) {
	if !t.built() {
		return nil, errZeroTelemetry
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%w: otelratekit: policy name %q: %w", core.ErrInvalidConfig, name, err)
	}
	if next == nil {
		return nil, fmt.Errorf("%w: otelratekit: policy %q is nil", core.ErrInvalidConfig, name)
	}
	limits := next.Limits()
	if len(limits) == 0 {
		return nil, fmt.Errorf("%w: otelratekit: policy %q is a zero Policy, not built by NewPolicy", core.ErrInvalidConfig, name)
	}
	store := Other
	if len(limits) > 0 && limits[0].Limiter != nil {
		store = storeName(limits[0].Limiter.Store())
	}
	p := &Policy{l: t.newLimiter(name, nil, "policy", store), next: next, limits: map[string]*limitOpts{}}
	p.shadow = []metric.AddOption{metric.WithAttributeSet(p.l.decisionSet(OutcomeShadow, ""))}
	blocked := append(slices.Clone(p.l.spanAttrs), AttrOutcome.String(OutcomeDenied), AttrBlocked.Bool(true))
	p.blocked = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(blocked...))}
	for _, lim := range limits {
		algorithm := Other
		if lim.Limiter != nil {
			algorithm = lim.Limiter.Algorithm()
		}
		opts := func(outcome string) []metric.AddOption {
			return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				AttrLimiterName.String(name), AttrLimitName.String(lim.Name), AttrAlgorithm.String(algorithm),
				AttrStore.String(store), AttrOutcome.String(outcome)))}
		}
		p.limits[lim.Name] = &limitOpts{allowed: opts(OutcomeAllowed), denied: opts(OutcomeDenied), shadow: opts(OutcomeShadow)}
	}
	return p, nil
}

// Name returns the policy's name, its ratekit.limiter.name.
func (p *Policy) Name() string {
	if !p.built() {
		return ""
	}
	return p.l.name
}

// Unwrap returns the wrapped policy.
func (p *Policy) Unwrap() *ratekit.Policy {
	if p == nil {
		return nil
	}
	return p.next
}

// Limits returns the wrapped policy's limits.
func (p *Policy) Limits() []ratekit.Limit { return p.Unwrap().Limits() }

// MaxCost returns the wrapped policy's MaxCost.
func (p *Policy) MaxCost() int64 { return p.Unwrap().MaxCost() }

// Allow is AllowN(ctx, key, 1).
func (p *Policy) Allow(ctx context.Context, key string) (ratekit.PolicyDecision, error) {
	return p.AllowN(ctx, key, 1)
}

// AllowN decides with the wrapped policy, in a span "ratekit.AllowN", and
// counts the request and each limit's part.
func (p *Policy) AllowN(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error) {
	if !p.built() {
		return ratekit.PolicyDecision{}, errZero
	}
	ctx, span := p.l.t.tracer.Start(ctx, "ratekit.AllowN", p.l.start...)
	d, err := p.next.AllowN(ctx, key, n)
	p.count(ctx, d, err)
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(n))
		p.endSpan(span, d, err)
	}
	span.End()
	return d, err
}

// count adds the request to ratekit.decisions and each limit's part to
// ratekit.policy.limit.decisions.
func (p *Policy) count(ctx context.Context, d ratekit.PolicyDecision, err error) {
	t := p.l.t
	switch {
	case err != nil:
		p.l.count(ctx, core.Decision{}, err)
		return
	case !d.Allowed && d.Blocked:
		t.decisions.Add(ctx, 1, p.blocked...)
	case !d.Allowed:
		t.decisions.Add(ctx, 1, p.l.denied...)
	case len(d.ShadowDenied) > 0:
		t.decisions.Add(ctx, 1, p.shadow...)
	default:
		t.decisions.Add(ctx, 1, p.l.allowed...)
	}
	for _, ld := range d.Limits {
		o, ok := p.limits[ld.Name]
		if !ok {
			continue
		}
		switch {
		case slices.Contains(d.Denied, ld.Name):
			t.limitDecisions.Add(ctx, 1, o.denied...)
		case slices.Contains(d.ShadowDenied, ld.Name):
			t.limitDecisions.Add(ctx, 1, o.shadow...)
		default:
			t.limitDecisions.Add(ctx, 1, o.allowed...)
		}
	}
}

// endSpan sets a policy decision's attributes on span, or its error.
func (p *Policy) endSpan(span trace.Span, d ratekit.PolicyDecision, err error) {
	if err != nil {
		span.SetAttributes(AttrOutcome.String(OutcomeError))
		failSpan(span, err)
		return
	}
	outcome := OutcomeAllowed
	switch {
	case !d.Allowed:
		outcome = OutcomeDenied
	case len(d.ShadowDenied) > 0:
		outcome = OutcomeShadow
	}
	span.SetAttributes(AttrOutcome.String(outcome), AttrRemaining.Int64(d.Remaining), AttrRetryAfter.Float64(d.RetryAfter.Seconds()),
		attribute.StringSlice("ratekit.denied", d.Denied), attribute.StringSlice("ratekit.shadow_denied", d.ShadowDenied), AttrBlocked.Bool(d.Blocked))
}

// Peek asks the wrapped policy, in a span "ratekit.Peek"; not a decision.
func (p *Policy) Peek(ctx context.Context, key string) (ratekit.PolicyDecision, error) {
	if !p.built() {
		return ratekit.PolicyDecision{}, errZero
	}
	ctx, span := p.l.t.tracer.Start(ctx, "ratekit.Peek", p.l.start...)
	d, err := p.next.Peek(ctx, key)
	if span.IsRecording() {
		p.endSpan(span, d, err)
	}
	span.End()
	return d, err
}

// Refund gives n back to every limit of key in the wrapped policy, in a
// span "ratekit.Refund".
func (p *Policy) Refund(ctx context.Context, key string, n int64) (ratekit.PolicyDecision, error) {
	if !p.built() {
		return ratekit.PolicyDecision{}, errZero
	}
	ctx, span := p.l.t.tracer.Start(ctx, "ratekit.Refund", p.l.start...)
	d, err := p.next.Refund(ctx, key, n)
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(n))
		if err != nil {
			failSpan(span, err)
		}
	}
	span.End()
	return d, err
}

// Reset deletes key's state in the wrapped policy, in a span
// "ratekit.Reset".
func (p *Policy) Reset(ctx context.Context, key string) error {
	if !p.built() {
		return errZero
	}
	ctx, span := p.l.t.tracer.Start(ctx, "ratekit.Reset", p.l.start...)
	err := p.next.Reset(ctx, key)
	if err != nil && span.IsRecording() {
		failSpan(span, err)
	}
	span.End()
	return err
}
