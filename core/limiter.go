package core

import "context"

// Limiter decides requests on keys. It is the one interface of every kind
// of ratekit limiter (each algorithm's, a policy of several limits, the
// policy a tier selects, a coalescing limiter) and of every wrapper of one
// (failsafe, denycache, hotkey, otelratekit), and what httplimit and
// grpclimit take: any wrapper wraps any limiter. Implementations are safe
// for concurrent use.
//
// A Limiter that cannot decide (a nil or zero value, not built by its
// constructor, or a wrapper of one) returns an error wrapping
// [ErrInvalidConfig] from every call, and 0 from MaxCost: constructors that
// take a Limiter refuse one whose MaxCost is below 1.
type Limiter interface {
	// Allow is AllowN(ctx, key, 1).
	Allow(ctx context.Context, key string) (Decision, error)
	// AllowN decides whether a request of cost n on key may proceed now,
	// and counts it when it does. A denied request consumes nothing.
	AllowN(ctx context.Context, key string, n int64) (Decision, error)
	// Peek reports the decision a request of cost 1 would get now, with the
	// current state in Remaining, without changing anything.
	Peek(ctx context.Context, key string) (Decision, error)
	// Refund gives n back to key, as far as the limiter can, and returns
	// what Peek reports after it.
	Refund(ctx context.Context, key string, n int64) (Decision, error)
	// Reset forgets key's state: the next request sees a fresh limiter.
	Reset(ctx context.Context, key string) error
	// MaxCost is the largest cost AllowN and Refund accept (a larger one
	// could never pass), math.MaxInt64 when any cost may pass, and 0 when
	// the limiter cannot decide at all.
	MaxCost() int64
}

// Request is one request of a batch decision: a key and a cost.
type Request struct {
	Key string
	N   int64
}

// Result is the decision for one Request, or its own error.
type Result struct {
	Decision Decision
	Err      error
}
