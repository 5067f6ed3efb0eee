package ratekit

import (
	"context"
	"fmt"

	"github.com/ratekit/ratekit/core"
)

// Multi decides one request against several limiters at once: it is
// allowed only if every limiter allows it, and then every limiter counts
// it; when any limiter denies, none counts anything. It is a [Policy] of
// unnamed limits, none in shadow and none with a penalty, that answers
// with each limiter's decision; use a Policy for names, shadow limits,
// penalties and refunds.
//
// The limiters must share one store, and either all have a Clock or none
// has (the decision is made at the first limiter's time); each needs a
// Prefix of its own.
type Multi struct {
	p *Policy
}

// NewMulti returns a Multi over limiters, or an error wrapping
// core.ErrInvalidConfig.
func NewMulti(limiters ...*Limiter) (*Multi, error) {
	limits := make([]Limit, len(limiters))
	for i, l := range limiters {
		limits[i] = Limit{Name: fmt.Sprintf("limit%d", i), Limiter: l}
	}
	p, err := NewPolicy(PolicyConfig{Limits: limits})
	if err != nil {
		return nil, err
	}
	return &Multi{p: p}, nil
}

// AllowN decides a request of cost n on key against every limiter, and
// returns each limiter's decision, in order. The request was counted
// (by all of them) exactly when every decision is Allowed. n must be at
// least 1 and at most the smallest limit.
func (m *Multi) AllowN(ctx context.Context, key string, n int64) ([]core.Decision, error) {
	return decisions(m.policy().AllowN(ctx, key, n))
}

// policy returns m's Policy: nil for a nil or zero Multi, whose calls
// then fail with an error wrapping core.ErrInvalidConfig.
func (m *Multi) policy() *Policy {
	if m == nil {
		return nil
	}
	return m.p
}

// Peek reports the decisions AllowN(ctx, key, 1) would get now, and writes
// nothing.
func (m *Multi) Peek(ctx context.Context, key string) ([]core.Decision, error) {
	return decisions(m.policy().Peek(ctx, key))
}

// Allowed reports whether every decision allowed the request.
func Allowed(ds []core.Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return len(ds) > 0
}

func decisions(d PolicyDecision, err error) ([]core.Decision, error) {
	if err != nil {
		return nil, err
	}
	out := make([]core.Decision, len(d.Limits))
	for i, l := range d.Limits {
		out[i] = l.Decision
	}
	return out, nil
}
