package engine

import (
	"context"

	"github.com/ratekit/ratekit/core"
)

// Limiter is the core.Limiter every algorithm's Limiter embeds: an Engine
// with the algorithm's script, registered twice (read-write for AllowN,
// read-only for Peek).
type Limiter struct {
	e           *Engine
	allow, peek *core.Script
}

// NewLimiter returns a Limiter running allow for AllowN and peek (the same
// Lua, read-only) for Peek.
func NewLimiter(e *Engine, allow, peek *core.Script) Limiter {
	return Limiter{e: e, allow: allow, peek: peek}
}

// Allow is AllowN(ctx, key, 1).
func (l Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN decides whether a request of cost n on key may proceed now, and
// counts it when it does; a denied request consumes nothing, and its
// RetryAfter is the exact wait until the same request would pass. n must be
// between 1 and the limit (Decision.Limit): a larger n could never pass and
// is an error wrapping core.ErrInvalidCost.
func (l Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.e.Decide(ctx, l.allow, key, n, ModeAllow)
}

// Peek reports the decision a request of cost 1 would get now, with the
// current state in Remaining, and writes nothing (EVALSHA_RO on Redis).
func (l Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.e.Decide(ctx, l.peek, key, 1, ModePeek)
}

// Reset deletes key's state: the next request sees a fresh limiter.
func (l Limiter) Reset(ctx context.Context, key string) error {
	return l.e.Reset(ctx, key)
}

// AllowMany decides many requests in one call: one pipelined round trip
// per server on the Redis stores. Each request is decided exactly as
// AllowN would decide it, in order (requests on one key see each other);
// each result carries its own error.
func (l Limiter) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	return l.e.AllowMany(ctx, l.allow, reqs)
}
