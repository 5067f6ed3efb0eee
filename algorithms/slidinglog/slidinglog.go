// Package slidinglog is the sliding window log of the Redis rate limiter
// guide: an exact rolling window. A request of cost n passes when the units
// allowed in the last Window, plus n, are at most Limit.
//
// Every allowed unit of cost is one entry of a sorted set (one slice element
// in the memory store), so memory per key is O(Limit): about 60-100 bytes
// per entry in Redis. Limit is therefore capped at MaxLimit; for larger
// limits use the sliding window counter or GCRA. Members are made unique by
// the script itself ("time_us:i"), with no id from the client.
//
// Configured alike, it makes the guide's decisions at the same times, except
// where the guide's floating-point seconds round an entry that is exactly
// Window old the other way (ratekit's integer microseconds are exact).
//
// # Time and configuration changes
//
// A key's log never runs backwards: with the clock behind the newest entry,
// the request is decided as at that entry's time, its entry is logged
// there, and RetryAfter and ResetAfter count the time until the clock
// catches up. Only an allowed request writes: a denial and a Peek leave the
// log untouched.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. The log is what happened, and
// stays (one rule, no choice): it is read with the new Limit (Remaining
// is never negative) and the new Window, but no entry outlives the Window
// it was logged under, and entries that had already left the window at
// the last write are gone. So a raised limit never denies a request the
// old one would have allowed, and a lowered one never allows a request
// the old one would have denied (the conformance suite checks both, on
// every store, with the two interleaved). State the limiter did not write
// is refused with core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) removes the n newest entries of the live window (fewer
// when fewer are live). An entry that has left the window cannot be
// refunded, and the newest entries go first whichever request logged them.
package slidinglog

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

//go:embed slidinglog.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	limit = iota
	window
)

var spec = engine.NewSpec(engine.Spec{
	Name: "slidinglog",
	Params: []engine.Param{
		limit:  {Name: "limit", Field: "Limit", Kind: engine.Count},
		window: {Name: "window_us", Field: "Window", Kind: engine.Micros},
	},
	Lua:   lua,
	Step:  step,
	Bound: bound,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:sl:"

// MaxLimit is the largest Limit New accepts: a key can hold Limit entries,
// about 1 MB in Redis at this size.
const MaxLimit = 10000

// Config configures a sliding window log.
type Config struct {
	// Limit is the most requests (sum of costs) allowed in any Window.
	Limit int64
	// Window is the length of the rolling window, a whole number of
	// microseconds.
	Window time.Duration
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock is used (the Redis server's TIME).
	Clock core.Clock
}

// New returns a sliding window log limiter keeping its state in store. It
// sends nothing to the store; an error wraps core.ErrInvalidConfig and
// names the field. Remaining is the number of units still allowed in the
// current window; a denied request's RetryAfter is the time until enough
// entries leave it; Window is the configured Window.
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
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Limit, []int64{
		limit:  cfg.Limit,
		window: int64(cfg.Window),
	})
	if err != nil {
		return l, err
	}
	if cfg.Limit > MaxLimit {
		return l, fmt.Errorf("%w: Limit %d needs up to %d log entries per key, more than MaxLimit (%d); use slidingcounter or gcra for large limits", core.ErrInvalidConfig, cfg.Limit, cfg.Limit, MaxLimit)
	}
	l.Window = cfg.Window
	return l, nil
}
