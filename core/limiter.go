package core

import (
	"context"
	"strconv"
)

// Limiter decides requests on keys. It is the one interface of every kind
// of ratekit limiter (each algorithm's, a policy of several limits, the
// policy a tier selects, a coalescing limiter) and of every wrapper of one
// (failsafe, denycache, hotkey, otelratekit), and what httplimit and
// grpclimit take: any wrapper wraps any limiter. Implementations are safe
// for concurrent use.
//
// Allow, AllowN, Peek and Refund are shorthands for Decide, which also
// takes limits given with the request (Request.Params): a customer's
// contract, a tier read from a database, a rule loaded from a file.
//
// A Limiter that cannot decide (a nil or zero value, not built by its
// constructor, or a wrapper of one) returns an error wrapping
// [ErrInvalidConfig] from every call, and 0 from MaxCost: constructors that
// take a Limiter refuse one whose MaxCost is below 1.
type Limiter interface {
	// Allow is AllowN(ctx, key, 1).
	Allow(ctx context.Context, key string) (Decision, error)
	// AllowN decides whether a request of cost n on key may proceed now,
	// and counts it when it does. A denied request consumes nothing. It is
	// Decide(ctx, Request{Key: key, N: n}).
	AllowN(ctx context.Context, key string, n int64) (Decision, error)
	// Peek reports the decision a request of cost 1 would get now, with the
	// current state in Remaining, without changing anything. It is
	// Decide(ctx, Request{Key: key, N: 1, Op: OpPeek}).
	Peek(ctx context.Context, key string) (Decision, error)
	// Refund gives n back to key, as far as the limiter can, and returns
	// what Peek reports after it. It is Decide(ctx, Request{Key: key, N: n,
	// Op: OpRefund}).
	Refund(ctx context.Context, key string, n int64) (Decision, error)
	// Decide does what r.Op says for r, against r.Params when they are
	// given and the limiter's own limits otherwise: the one call the
	// shorthands above make.
	Decide(ctx context.Context, r Request) (Decision, error)
	// Reset forgets key's state: the next request sees a fresh limiter.
	Reset(ctx context.Context, key string) error
	// MaxCost is the largest cost AllowN and Refund accept (a larger one
	// could never pass), math.MaxInt64 when any cost may pass, and 0 when
	// the limiter cannot decide at all. A request given its own limits
	// (Request.Params) may cost up to the least of their Limits instead.
	MaxCost() int64
}

// Op is what a Request asks of a limiter.
type Op uint8

const (
	// OpAllow decides whether the request may proceed, and counts it
	// when it does: AllowN. It is the zero Op.
	OpAllow Op = iota
	// OpPeek reports the decision the request would get now, and changes
	// nothing: Peek, for a request of cost N.
	OpPeek
	// OpRefund gives N back to the key: Refund.
	OpRefund
)

// String names the Op: "allow", "peek" or "refund".
func (o Op) String() string {
	switch o {
	case OpAllow:
		return "allow"
	case OpPeek:
		return "peek"
	case OpRefund:
		return "refund"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Request is one request: a key, a cost, what it asks (Op), and the
// limits to decide it against when the caller gives them with it
// (Params). Decide takes one, AllowMany several.
type Request struct {
	// Key is the user key the request counts against: 1 to MaxKeyLen
	// bytes (ErrInvalidKey).
	Key string
	// N is the request's cost: 1 to the limiter's MaxCost, or to the
	// least Limit of Params when they are given (ErrInvalidCost).
	N int64
	// Op is what the request asks: OpAllow, the zero value, unless set.
	// AllowMany decides OpAllow requests only.
	Op Op
	// Params, when not nil, are the limits to decide this request
	// against instead of the limiter's own: one entry per limit of the
	// limiter, in its order (one for an algorithm's limiter, one per
	// limit of a policy), each built by its algorithm package's NewParams
	// for that limit's algorithm; a nil entry keeps that limit's own
	// configuration. The key's state is the same whichever limits a
	// request brings: each algorithm's package doc says what it becomes
	// when they change ("Time and configuration changes"). The decision's
	// Limit and Window are those of the limits applied.
	Params []Params
	// Keys, when not nil, give each limit a key of its own under Key:
	// one entry per limit, in the limiter's order, and limit i counts at
	// Key and Keys[i] together, so that limits of different keys (the
	// descriptors of an Envoy request, a per-IP and a per-user limit) are
	// decided at once, counted by all or by none. Key is what they share:
	// on Redis Cluster, their slot. Each entry is at most MaxKeyLen bytes
	// (ErrInvalidKey), and may be empty (the limit counts at Key alone). A
	// policy with penalties refuses Keys: its block is one per Key.
	Keys []string
}

// Result is the decision for one Request, or its own error.
type Result struct {
	Decision Decision
	Err      error
}
