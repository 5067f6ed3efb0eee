package core

import "context"

// Limiter is what every ratekit algorithm's limiter offers. Code that only
// needs a decision should accept the smallest interface it uses (for
// example, just AllowN) rather than this one.
type Limiter interface {
	// Allow is AllowN(ctx, key, 1).
	Allow(ctx context.Context, key string) (Decision, error)
	// AllowN decides whether a request of cost n may proceed now, and
	// counts it when it does. A denied request consumes nothing.
	AllowN(ctx context.Context, key string, n int64) (Decision, error)
	// Peek reports the decision a request of cost 1 would get now, and the
	// current state in Remaining, without changing anything.
	Peek(ctx context.Context, key string) (Decision, error)
	// Reset forgets key's state: the next request sees a fresh limiter.
	Reset(ctx context.Context, key string) error
}
