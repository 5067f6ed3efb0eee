// Package gcra is the generic cell rate algorithm, as in
// go-redis/redis_rate and throttled: Rate requests per Period, in bursts of
// up to Burst, with one key per user holding the theoretical arrival time
// (TAT). It is the cheapest script here: one GET and one SET with its TTL.
//
// The emission interval Period/Rate need not be a whole number of
// microseconds: the TAT is kept to 1/Rate of a microsecond, in integers, so
// 3 per second is exactly 3 per second.
//
// Beyond AllowN, the limiter's AllowAtMost grants as many units of a
// request as fit now (redis_rate's AllowAtMost): GCRA is the algorithm
// whose step can.
//
// # Time and configuration changes
//
// A key's time never runs backwards: with the clock behind the state's last
// write, the request is decided as at that write, and RetryAfter and
// ResetAfter count the time until the clock catches up, so a caller that
// sleeps RetryAfter gets through.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. The state stores the Rate, Period
// and Burst that wrote it; what it becomes under another configuration is
// one rule per parameter:
//
//   - Rate, Period: what the key used (Config.Carry ratekit.CarryUsed,
//     the default) or had left (ratekit.CarryAvailable) at its last write
//     carries over in whole requests, at most Burst, and drains at the new
//     rate from then on; a partly drained request counts as used, unless
//     the new configuration is at least as fast and as large as the old
//     one in every parameter, when it counts as drained. So a raised rate
//     never denies what the old one allowed (the surprise of
//     brandur/redis-cell#54 and letsencrypt/boulder#8785, where the time
//     debt was kept and a faster rate shrank the burst window).
//   - Burst: with CarryUsed the requests counted stay counted (a raised
//     Burst gives the difference at once, a lowered one at most Burst
//     counted); with CarryAvailable what was left stays, at most Burst.
//
// Either way a raised limit never denies a request the old one would
// have allowed, and a lowered one never allows a request the old one
// would have denied (the conformance suite checks both, on every store,
// with the two interleaved). From the old configuration's theoretical
// arrival time on, the key is fresh, as its TTL says. State written by a
// ratekit from before this rule (four integers) is held to at most a full
// Burst ahead of its write. State the limiter did not write is refused
// with core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) moves the theoretical arrival time back by n emission
// intervals, never before now. Refunded right after the request it undoes,
// it restores the state exactly; time that has passed since cannot be
// given back.
package gcra

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed gcra.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	rate = iota
	period
	burst
	carry
)

var spec = engine.NewSpec(engine.Spec{
	Name: "gcra",
	Params: []engine.Param{
		rate:   {Name: "rate", Field: "Rate", Kind: engine.Count},
		period: {Name: "period_us", Field: "Period", Kind: engine.Micros},
		burst:  {Name: "burst", Field: "Burst", Kind: engine.Count},
		carry:  {Name: "carry", Field: "Carry", Kind: engine.Choice, Choices: ratekit.Carries()},
	},
	Lua:         lua,
	Step:        step,
	AtMost:      true,
	StateLen:    stateLen,
	OldStateLen: oldStateLen,
	Bound:       bound,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:gcra:"

// Config configures a GCRA limiter.
type Config struct {
	// Rate is how many requests are allowed per Period in the long run.
	Rate int64
	// Period is the time over which Rate requests are allowed, a whole
	// number of microseconds.
	Period time.Duration
	// Burst is the most requests (sum of costs) allowed at once, and the
	// largest cost a single request may have.
	Burst int64
	// Carry says what a key written under another Rate, Period or Burst
	// keeps: ratekit.CarryUsed (the default: the requests it made stay
	// counted) or ratekit.CarryAvailable (what it had left stays, at most
	// Burst).
	Carry ratekit.Carry
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock is used (the Redis server's TIME).
	Clock core.Clock
}

// New returns a GCRA limiter keeping its state in store. It sends nothing
// to the store; an error wraps core.ErrInvalidConfig and names the field.
// Remaining is how many requests of cost 1 would pass now; ResetAfter is
// the time until a full burst is available again, and Window the time a
// burst takes to come back (Period times Burst/Rate, rounded up). Its
// AllowAtMost grants as many units of a request as fit (see
// ratekit.Limiter.AllowAtMost).
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
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Burst, []int64{
		rate:   cfg.Rate,
		period: int64(cfg.Period),
		burst:  cfg.Burst,
		carry:  int64(cfg.Carry),
	})
	if err != nil {
		return l, err
	}
	if cfg.Burst > params.MaxCount/l.Param(period) {
		return l, fmt.Errorf("%w: Burst*Period: %d x %v is too large to compute exactly (at most 2^50 µs)", core.ErrInvalidConfig, cfg.Burst, cfg.Period)
	}
	l.Window = time.Duration(params.CeilDiv(cfg.Burst*l.Param(period), cfg.Rate)) * time.Microsecond
	return l, nil
}
