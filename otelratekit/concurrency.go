package otelratekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
)

// Concurrency is a concurrency limiter that reports its acquires as
// decisions (ratekit.decisions, with ratekit.algorithm "concurrency") and
// the leases this process holds (ratekit.concurrency.leases: up by one on
// each lease acquired, down by one on each Release, whatever the store
// answers, since the holder is done with it; so a lease released twice, or
// released by another process than the one that acquired it, skews it). Each call is a span
// ("ratekit.Acquire", "ratekit.Release", "ratekit.Extend", "ratekit.Peek",
// "ratekit.Reset"). It is safe for concurrent use.
type Concurrency struct {
	l    *Limiter // the attributes, instruments and decision counting
	next *concurrency.Limiter
	// leaseAttrs are ratekit.concurrency.leases' attributes.
	leaseAttrs []metric.AddOption
}

// Concurrency wraps next, a concurrency limiter named name (see
// Telemetry.Limiter for names). An error wraps core.ErrInvalidConfig: for
// a bad name, or a next that cannot decide (nil, or whose Limit is below
// 1: not built by its New).
func (t *Telemetry) Concurrency(name string, next *concurrency.Limiter) (*Concurrency, error) {
	if !t.built() {
		return nil, errZeroTelemetry
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%w: otelratekit: limiter name %q: %w", core.ErrInvalidConfig, name, err)
	}
	if next == nil || next.Limit() < 1 {
		return nil, fmt.Errorf("%w: otelratekit: concurrency limiter %q cannot decide (nil, or not built by its New)", core.ErrInvalidConfig, name)
	}
	l := t.newLimiter(name, nil, next.Algorithm(), storeName(next.Store()))
	return &Concurrency{l: l, next: next, leaseAttrs: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(l.spanAttrs...))}}, nil
}

// Name returns the limiter's name, its ratekit.limiter.name.
func (c *Concurrency) Name() string {
	if !c.built() {
		return ""
	}
	return c.l.name
}

// Algorithm returns "concurrency".
func (c *Concurrency) Algorithm() string {
	if !c.built() {
		return ""
	}
	return c.l.algorithm
}

// StoreName returns the name of the limiter's store, or "other".
func (c *Concurrency) StoreName() string {
	if !c.built() {
		return ""
	}
	return c.l.store
}

// Unwrap returns the wrapped concurrency limiter.
func (c *Concurrency) Unwrap() *concurrency.Limiter {
	if c == nil {
		return nil
	}
	return c.next
}

// Limit returns the wrapped limiter's Limit; 0 for a Concurrency its
// Telemetry did not build (httplimit and grpclimit refuse it).
func (c *Concurrency) Limit() int64 { return c.Unwrap().Limit() }

// TTL returns the wrapped limiter's TTL.
func (c *Concurrency) TTL() time.Duration { return c.Unwrap().TTL() }

// Acquire is AcquireN(ctx, key, 1).
func (c *Concurrency) Acquire(ctx context.Context, key string) (concurrency.Lease, core.Decision, error) {
	return c.AcquireN(ctx, key, 1)
}

// AcquireN acquires a lease of cost n on key from the wrapped limiter, in
// a span "ratekit.Acquire", counts the decision, and counts the lease
// while it is held.
func (c *Concurrency) AcquireN(ctx context.Context, key string, n int64) (concurrency.Lease, core.Decision, error) {
	if !c.built() {
		return concurrency.Lease{}, core.Decision{}, errZero
	}
	ctx, span := c.l.t.tracer.Start(ctx, "ratekit.Acquire", c.l.start...)
	lease, d, err := c.next.AcquireN(ctx, key, n)
	c.l.count(ctx, d, err)
	if err == nil && d.Allowed {
		c.l.t.leases.Add(ctx, 1, c.leaseAttrs...)
	}
	if span.IsRecording() {
		span.SetAttributes(AttrCost.Int64(n))
		endDecision(span, d, err)
	}
	span.End()
	return lease, d, err
}

// Release gives lease back to the wrapped limiter, in a span
// "ratekit.Release", and stops counting it. A lease that cannot be a live
// one (core.ErrInvalidLease: the zero Lease of a denial) was never counted
// and is not uncounted.
func (c *Concurrency) Release(ctx context.Context, lease concurrency.Lease) (bool, error) {
	if !c.built() {
		return false, errZero
	}
	ctx, span := c.l.t.tracer.Start(ctx, "ratekit.Release", c.l.start...)
	live, err := c.next.Release(ctx, lease)
	if !errors.Is(err, core.ErrInvalidLease) {
		c.l.t.leases.Add(ctx, -1, c.leaseAttrs...)
	}
	endLeaseSpan(span, live, err)
	return live, err
}

// Extend extends lease in the wrapped limiter, in a span "ratekit.Extend".
func (c *Concurrency) Extend(ctx context.Context, lease concurrency.Lease) (bool, error) {
	if !c.built() {
		return false, errZero
	}
	ctx, span := c.l.t.tracer.Start(ctx, "ratekit.Extend", c.l.start...)
	live, err := c.next.Extend(ctx, lease)
	endLeaseSpan(span, live, err)
	return live, err
}

// endLeaseSpan records whether a released or extended lease was live, or
// the call's error, and ends span.
func endLeaseSpan(span trace.Span, live bool, err error) {
	if span.IsRecording() {
		if err != nil {
			failSpan(span, err)
		} else {
			span.SetAttributes(attribute.Bool("ratekit.lease.live", live))
		}
	}
	span.End()
}

// Peek asks the wrapped limiter, in a span "ratekit.Peek"; not a decision.
func (c *Concurrency) Peek(ctx context.Context, key string) (core.Decision, error) {
	if !c.built() {
		return core.Decision{}, errZero
	}
	ctx, span := c.l.t.tracer.Start(ctx, "ratekit.Peek", c.l.start...)
	d, err := c.next.Peek(ctx, key)
	if span.IsRecording() {
		endDecision(span, d, err)
	}
	span.End()
	return d, err
}

// Reset deletes every lease on key in the wrapped limiter, in a span
// "ratekit.Reset". The leases this process holds on key stay counted
// until they are released.
func (c *Concurrency) Reset(ctx context.Context, key string) error {
	if !c.built() {
		return errZero
	}
	ctx, span := c.l.t.tracer.Start(ctx, "ratekit.Reset", c.l.start...)
	err := c.next.Reset(ctx, key)
	if err != nil && span.IsRecording() {
		failSpan(span, err)
	}
	span.End()
	return err
}
