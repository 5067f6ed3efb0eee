package ratekit

import (
	"context"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// Limiter is the one concrete limiter type of ratekit: every algorithm's
// New returns one (one algorithm, one configuration, one store), and so do
// NewPolicy (several limits decided at once), Tiers.Policy and Coalesce.
// It implements core.Limiter, so any wrapper (failsafe, denycache, hotkey,
// otelratekit, httplimit, grpclimit) wraps any Limiter. It is safe for
// concurrent use; all its state lives in the store, under its limits' key
// prefixes.
//
// The zero Limiter, and a nil *Limiter, cannot decide: every call returns
// an error wrapping core.ErrInvalidConfig, and MaxCost returns 0.
type Limiter struct {
	e *engine.Engine
	c *engine.Coalescer // Allow and AllowN go through it when set (Coalesce)
}

var _ core.Limiter = (*Limiter)(nil)

func init() {
	engine.SetPublic(
		func(e *engine.Engine) any { return &Limiter{e: e} },
		func(l any) *engine.Engine {
			if l, ok := l.(*Limiter); ok {
				return l.engine()
			}
			return nil
		})
}

// engine returns l's engine: nil for a nil or zero Limiter, whose calls
// then fail with an error wrapping core.ErrInvalidConfig.
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
		return l.c.Decide(ctx, key, 1, nil, nil)
	}
	return l.engine().Decide(ctx, key, 1, engine.ModeAllow)
}

// AllowN decides whether a request of cost n on key may proceed now, and
// counts it when it does; a denied request consumes nothing and writes
// nothing, and its RetryAfter is the exact wait until the same request
// would pass. On a policy, the request is allowed when every enforced
// limit allows it and no penalty blocks the key, and then every limit
// counts it; when any denies, none counts anything (the only write a
// denial makes is the penalty block it may start). n must be between 1
// and MaxCost: a larger n could never pass and is an error wrapping
// core.ErrInvalidCost. A key must be 1 to core.MaxKeyLen bytes
// (core.ErrInvalidKey). Store failures wrap core.ErrStore; a call whose
// ctx has ended sends nothing.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (core.Decision, error) {
	if l != nil && l.c != nil {
		return l.c.Decide(ctx, key, n, nil, nil)
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
// first, then refund what should not have counted (a successful login, a
// response under 400, the tokens an LLM call did not use). n is checked
// as for AllowN.
//
// A policy refunds every limit at once, including a shadow limit that
// would have denied the request and so did not count it (its count is
// then lower than what it counted, never below nothing); a refund does
// not lift a penalty block.
func (l *Limiter) Refund(ctx context.Context, key string, n int64) (core.Decision, error) {
	return l.engine().Decide(ctx, key, n, engine.ModeRefund)
}

// Decide does what r.Op asks (OpAllow: AllowN; OpPeek: Peek of cost
// r.N; OpRefund: Refund) for r.Key at cost r.N, against the limits
// r.Params gives when it gives them, and the limiter's own otherwise.
//
// Params are one per limit (one for an algorithm's limiter, one per limit
// of a policy, in its order; a nil entry keeps that limit's own), each
// built by the NewParams of the limit's algorithm package; r.N may then
// be up to the least of their Limits. The request is decided by the same
// script as any other, its parameters in the script's arguments: no
// limiter is built and no script composed per request. The key's state
// is the same whichever limits its requests bring (each algorithm's
// package doc says what it becomes when they change), and the Decision
// reports the Limit and Window applied. Wrong Params (another
// algorithm's, one entry too many, a calendar window's on a limiter
// without a Clock) are an error wrapping core.ErrInvalidConfig. On a
// coalescing limiter (Coalesce), OpAllow requests are coalesced, with
// their Params.
func (l *Limiter) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if l != nil && l.c != nil && r.Op == core.OpAllow {
		return l.c.Decide(ctx, r.Key, r.N, r.Params, r.Keys)
	}
	return l.engine().DecideRequest(ctx, &r)
}

// Reset deletes key's state, in every limit of a policy and its penalty
// block: the next request sees a fresh limiter.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.engine().Reset(ctx, key)
}

// AllowMany decides many requests in one call: each exactly as Decide
// would decide it, in order (requests on one key see each other), with its
// own error. Every request's Op must be core.OpAllow; each may give its
// own Params (requests that give other limits than the rest go in other
// script calls, and a key whose requests give different limits takes a
// round trip per request). On the Redis stores the requests go in one pipelined round
// trip per server, and up to 64 decisions go in one script call: any
// requests on a store that is one node (core.SingleNode), those on the
// same key on any other (a cluster, a Ring). A key with more than 64
// requests takes one more round trip for each further 64: its requests
// never go in two script calls of one round trip, which a server that
// had to load one call's script would run out of order.
func (l *Limiter) AllowMany(ctx context.Context, reqs []core.Request) []core.Result {
	return l.engine().AllowMany(ctx, reqs)
}

// AllowAtMost allows as many units of a request of cost n as fit now, at
// least 1 and at most n, and reports how many it granted (0 when denied).
// n may exceed MaxCost; at most MaxCost units are ever granted at once.
// When nothing fits, RetryAfter is the wait until one unit would. Only an
// algorithm whose step can grant part of a request does it (GCRA, as
// go-redis/redis_rate's AllowAtMost); on the others, and on a policy, it
// returns an error wrapping errors.ErrUnsupported and sends nothing.
func (l *Limiter) AllowAtMost(ctx context.Context, key string, n int64) (granted int64, d core.Decision, err error) {
	return l.engine().AllowAtMost(ctx, key, n)
}
