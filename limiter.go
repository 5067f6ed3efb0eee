package ratekit

import (
	"context"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// Limiter is the limiter every ratekit algorithm's New returns: one
// algorithm, one configuration, one store. It is safe for concurrent use;
// all its state lives in the store, under the configuration's key prefix.
type Limiter struct {
	e *engine.Engine
	c *engine.Coalescer // Allow and AllowN go through it when set (Coalesce)
}

var _ core.Limiter = (*Limiter)(nil)

// FromEngine wraps an engine. It is for the algorithm packages of this
// module, which cannot name engine.Engine outside it.
func FromEngine(e *engine.Engine) *Limiter { return &Limiter{e: e} }

// engine returns l's engine: nil for a nil or zero Limiter, whose calls
// then fail with engine.ErrZero (wrapping core.ErrInvalidConfig) instead
// of panicking.
func (l *Limiter) engine() *engine.Engine {
	if l == nil {
		return nil
	}
	return l.e
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (core.Decision, error) {
	// AllowN's body, not a call to it: AllowN does not inline, and the
	// frame it adds is measurable on the memory store.
	if l != nil && l.c != nil {
		return l.c.Decide(ctx, key, 1)
	}
	return l.engine().Decide(ctx, key, 1, engine.ModeAllow)
}

// AllowN decides whether a request of cost n on key may proceed now, and
// counts it when it does; a denied request consumes nothing and writes
// nothing, and its RetryAfter is the exact wait until the same request
// would pass. n must be between 1 and the limit (Decision.Limit): a larger
// n could never pass and is an error wrapping core.ErrInvalidCost. A key
// must be 1 to core.MaxKeyLen bytes (core.ErrInvalidKey). Store failures
// wrap core.ErrStore; a call whose ctx has ended sends nothing.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	if l != nil && l.c != nil {
		return l.c.Decide(ctx, key, n)
	}
	return l.engine().Decide(ctx, key, n, engine.ModeAllow)
}

// Peek reports the decision a request of cost 1 would get now, with the
// current state in Remaining, and writes nothing (EVALSHA_RO on Redis).
func (l *Limiter) Peek(ctx context.Context, key string) (core.Decision, error) {
	return l.engine().Decide(ctx, key, 1, engine.ModePeek)
}

// Refund gives n back to key: the limiter takes n off what it has counted
// for key, as far as it can, and returns what Peek reports after it. What
// a refund can undo is said in each algorithm's package doc (a sliding
// log entry that has left the window is gone; a fixed window's count is
// only that of the current window). Use it to count by outcome: allow
// first, then refund what should not have counted. n is checked as for
// AllowN.
func (l *Limiter) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.engine().Decide(ctx, key, n, engine.ModeRefund)
}

// Reset deletes key's state: the next request sees a fresh limiter.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.engine().Reset(ctx, key)
}

// AllowMany decides many requests in one call: each exactly as AllowN
// would decide it, in order (requests on one key see each other), with its
// own error. On the Redis stores the requests go in one pipelined round
// trip per server, and up to 64 decisions go in one script call: any
// requests on a store that is one node (core.SingleNode), those on the
// same key on any other (a cluster, a Ring). A key with more than 64
// requests takes one more round trip for each further 64: its requests
// never go in two script calls of one round trip, which a server that
// had to load one call's script would run out of order.
func (l *Limiter) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	return l.engine().AllowMany(ctx, reqs)
}

// Call returns the script call AllowN(ctx, key, n) would send to the store
// now: the script (its Lua source and SHA1), its keys and its arguments.
// It is for looking at a decision from outside: loading the script in
// redis-cli, or measuring it with redis-benchmark. With no Clock the first
// argument is -1, which makes the script read the server's TIME.
func (l *Limiter) Call(key string, n int64) (core.ScriptCall, error) {
	return l.engine().Call(key, n)
}
