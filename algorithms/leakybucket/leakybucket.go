// Package leakybucket is the leaky bucket (policing) of the Redis rate
// limiter guide: each request pours its cost into a bucket of Capacity that
// drains continuously, LeakRate units per Per; a request that would overflow
// is rejected at once (no queueing, no delay).
//
// The guide stores a floating-point level; ratekit stores the level scaled
// by Per in microseconds, so that draining LeakRate units per Per removes
// exactly LeakRate scaled units per microsecond, all in integers. Configured
// like the guide (Per = one second), it makes the guide's decisions at the
// same times, except where the guide's rounding lands a level exactly at
// Capacity on the other side.
//
// Capacity*Per (in microseconds) must be at most 2^51.
//
// # Time and configuration changes
//
// A key's time never runs backwards: with the clock behind the last leak,
// the bucket is decided as at that time, and RetryAfter and ResetAfter
// count the time until the clock catches up, so a caller that sleeps
// RetryAfter gets through; an empty bucket (after a Refund, say) is in its
// initial state already, and its ResetAfter is 0.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. The state stores the Capacity,
// LeakRate and Per that wrote it; what it becomes under another
// configuration is one rule per parameter:
//
//   - Capacity: with Config.Carry ratekit.CarryUsed (the default) the
//     level (what the key used) stays, at most a full bucket: a raised
//     Capacity gives the difference at once. With ratekit.CarryAvailable
//     the room (what it had left) stays, at most the new Capacity.
//   - LeakRate: the level stays, and drains at the new rate since the last
//     leak.
//   - Per: the level (or the room) carries over in whole units; a partly
//     drained unit counts as drained when the new configuration is at
//     least as large and as fast as the old one in every parameter, as
//     not drained otherwise.
//
// Either way a raised limit never denies a request the old one would
// have allowed, and a lowered one never allows a request the old one
// would have denied (the conformance suite checks both, on every store,
// with the two interleaved). The bucket is empty from the moment it would
// have been under the configuration that wrote it. State written by a
// ratekit from before this rule (four integers) keeps its level in whole
// units. State the limiter did not write is refused with
// core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) drains n units from the bucket at once, never below
// empty. Refunded right after the request it undoes, it restores the level
// exactly; what has already leaked cannot be refunded again.
package leakybucket

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed leakybucket.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	capacity = iota
	leakRate
	per
	carry
)

var spec = engine.NewSpec(engine.Spec{
	Name: "leakybucket",
	Params: []engine.Param{
		capacity: {Name: "capacity", Field: "Capacity", Kind: engine.Count},
		leakRate: {Name: "leak_rate", Field: "LeakRate", Kind: engine.Count},
		per:      {Name: "per_us", Field: "Per", Kind: engine.Micros},
		carry:    {Name: "carry", Field: "Carry", Kind: engine.Choice, Choices: ratekit.Carries()},
	},
	Lua:         lua,
	Step:        step,
	StateLen:    stateLen,
	OldStateLen: oldStateLen,
	Bound:       bound,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:lb:"

// Config configures a leaky bucket.
type Config struct {
	// Capacity is the bucket's size: the largest burst, and the largest
	// cost a single request may have.
	Capacity int64
	// LeakRate is how many units drain per Per.
	LeakRate int64
	// Per is the time over which LeakRate units drain, a whole number of
	// microseconds: LeakRate 5, Per time.Second drains 5 units a second.
	Per time.Duration
	// Carry says what a key written under another configuration keeps:
	// ratekit.CarryUsed (the default: its level, what it used) or
	// ratekit.CarryAvailable (its room, what it had left), at most a full
	// bucket.
	Carry ratekit.Carry
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock is used (the Redis server's TIME).
	Clock core.Clock
}

// New returns a leaky bucket limiter keeping its state in store. It sends
// nothing to the store; an error wraps core.ErrInvalidConfig and names the
// field. Remaining is the whole units of room left in the bucket; a denied
// request's RetryAfter is the time until enough has drained; ResetAfter is
// the time until the bucket is empty, and Window the time a full bucket
// takes to drain (Per times Capacity/LeakRate, rounded up).
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
		capacity: cfg.Capacity,
		leakRate: cfg.LeakRate,
		per:      int64(cfg.Per),
		carry:    int64(cfg.Carry),
	})
	if err != nil {
		return l, err
	}
	if cfg.Capacity > params.MaxSpan/l.Param(per) {
		return l, fmt.Errorf("%w: Capacity*Per: %d x %v is too large to compute exactly (at most 2^51 µs)", core.ErrInvalidConfig, cfg.Capacity, cfg.Per)
	}
	// The time a full bucket takes to drain.
	l.Window = time.Duration(params.CeilDiv(cfg.Capacity*l.Param(per), cfg.LeakRate)) * time.Microsecond
	return l, nil
}
