// Package tokenbucket is the token bucket rate limiter of the Redis rate
// limiter guide: a bucket of Capacity tokens, full at first, that gains
// RefillRate tokens at the end of every whole RefillInterval and never holds
// more than Capacity. A request of cost n passes when n tokens are there, and
// takes them.
//
// The decision is one atomic script (tokenbucket.lua, run by the Redis
// stores) or its Go twin (twin.go, run by the memory store); both compute in
// integer microseconds and agree exactly.
//
// On top of the guide's script, ratekit adds costs, Peek, Reset, exact
// RetryAfter and ResetAfter, and a TTL on every key equal to the time until
// the bucket is full again. One difference from the guide is deliberate: a
// bucket that has refilled to Capacity forgets its refill phase and behaves
// exactly like a new bucket (its next refill comes a whole RefillInterval
// after its next request). That is what makes an expired key and a stale one
// decide alike on every store; the guide, which never expires keys, would
// keep the old phase and could refill a just-drained bucket early.
// Otherwise, configured alike, it makes the guide's decisions at the same
// times, which the seed-parity test checks against the guide's script on a
// real Redis.
//
// # Time and configuration changes
//
// A clock behind the bucket's last refill refills nothing, and RetryAfter
// and ResetAfter count the time until it catches up: a caller that sleeps
// RetryAfter gets through.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. The bucket stores the Capacity
// that wrote it; what it becomes under another configuration is one rule
// per parameter:
//
//   - Capacity: with Config.Carry ratekit.CarryUsed (the default), the
//     tokens it used stay used: a Capacity raised by k gives k tokens at
//     once, a lowered one takes them away (never below none). With
//     ratekit.CarryAvailable the tokens it has stay, at most the new
//     Capacity.
//   - RefillRate, RefillInterval: the tokens stay, and refill at the new
//     rate from the same phase.
//
// Either way a raised limit never denies a request the old one would
// have allowed, and a lowered one never allows a request the old one
// would have denied (the conformance suite checks both, on every store,
// with the two interleaved). State counts as a full bucket from the
// moment it would have been full under the configuration that wrote it,
// so it never outlives the TTL it was written with. State written by a
// ratekit from before this rule (three integers) is read as written under
// the configuration reading it. State the bucket did not write is refused
// with core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) puts n tokens back, never above Capacity, keeping the
// refill phase. Refunded right after the request it undoes, it restores
// the bucket exactly; later, refill may already have filled what the
// request took, and the bucket cannot hold more than Capacity.
package tokenbucket

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed tokenbucket.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	capacity = iota
	refillRate
	refillInterval
	carry
)

var spec = engine.NewSpec(engine.Spec{
	Name: "tokenbucket",
	Params: []engine.Param{
		capacity:       {Name: "capacity", Field: "Capacity", Kind: engine.Count},
		refillRate:     {Name: "refill_rate", Field: "RefillRate", Kind: engine.Count},
		refillInterval: {Name: "refill_interval_us", Field: "RefillInterval", Kind: engine.Micros},
		carry:          {Name: "carry", Field: "Carry", Kind: engine.Choice, Choices: ratekit.Carries()},
	},
	Lua:         lua,
	Step:        step,
	StateLen:    stateLen,
	OldStateLen: oldStateLen,
	Bound:       bound,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:tb:"

// Config configures a token bucket.
type Config struct {
	// Capacity is the most tokens the bucket holds: the largest burst, and
	// the largest cost a single request may have. It starts full.
	Capacity int64
	// RefillRate is the number of tokens added at the end of each whole
	// RefillInterval. It may exceed Capacity: the bucket then fills in one
	// interval.
	RefillRate int64
	// RefillInterval is the time between refills, a whole number of
	// microseconds.
	RefillInterval time.Duration
	// Carry says what a key written under another Capacity keeps:
	// ratekit.CarryUsed (the default: the tokens it used stay used) or
	// ratekit.CarryAvailable (the tokens it has stay, at most Capacity).
	Carry ratekit.Carry
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision, passed to the
	// store with the request. When nil, the store's clock is used: the
	// Redis server's TIME, or the memory store's own clock.
	Clock core.Clock
}

// New returns a token bucket limiter keeping its state in store. It sends
// nothing to the store; an error wraps core.ErrInvalidConfig and names the
// bad field. Its decisions' Window is the time the bucket takes to refill
// from empty: RefillInterval times Capacity/RefillRate, rounded up.
func New(store core.ScriptRunner, cfg Config) (*ratekit.Limiter, error) {
	l, err := configure(cfg)
	if err != nil {
		return nil, err
	}
	return engine.Build[*ratekit.Limiter](store, cfg.Clock, l)
}

// NewParams returns cfg's parameters, to give with a request
// (core.Request.Params) to a limiter of this algorithm instead of those
// it was built with. It checks cfg as New does, with the same errors;
// cfg.Prefix and cfg.Clock must be empty: they are the limiter's.
func NewParams(cfg Config) (core.Params, error) {
	l, err := configure(cfg)
	return spec.NewParams(cfg.Prefix, cfg.Clock, l, err)
}

// configure checks cfg and returns its limit.
func configure(cfg Config) (engine.Limit, error) {
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Capacity, []int64{
		capacity:       cfg.Capacity,
		refillRate:     cfg.RefillRate,
		refillInterval: int64(cfg.RefillInterval),
		carry:          int64(cfg.Carry),
	})
	if err != nil {
		return l, err
	}
	interval := l.Param(refillInterval)
	refills := params.CeilDiv(cfg.Capacity, cfg.RefillRate)
	if refills > params.MaxSpan/interval {
		return l, fmt.Errorf("%w: RefillInterval: a full refill takes %d intervals of %v, longer than %v", core.ErrInvalidConfig, refills, cfg.RefillInterval, time.Duration(params.MaxSpan)*time.Microsecond)
	}
	l.Window = time.Duration(refills*interval) * time.Microsecond
	return l, nil
}
