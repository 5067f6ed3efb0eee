// Package slidingcounter is the sliding window counter of the Redis rate
// limiter guide: two fixed windows of length Window, aligned to the epoch,
// blended by weight. At elapsed time e into the current window the estimate
// is prev*(Window-e)/Window + curr, and a request of cost n passes while
// estimate + n - 1 < Limit (for n = 1, the guide's estimate < Limit).
//
// The guide computes the weight in floating point; ratekit computes
//
//	prev*(W-e) + curr*W < (Limit-n+1)*W
//
// in integer microseconds, exactly. The two differ only where the exact
// estimate equals the threshold and the guide's rounding falls on the other
// side; ratekit takes the exact value (the seed-parity test shows that every
// difference is such a tie). The guide keeps two keys; ratekit packs both
// counters and the window number into one value, one GET and one SET with
// its TTL, in one slot by construction.
//
// Bounds: within one aligned window at most Limit pass. The estimate
// assumes the previous window's requests were spread evenly; in any rolling
// interval of length Window, fewer than Limit + 1 + prev*e/Window pass,
// where prev is the previous window's count (at most Limit): never more
// than 2 x Limit, which a burst just before a window boundary and another
// just after it can reach.
//
// Limit*Window (in microseconds) must be at most 2^51 so that the
// arithmetic stays exact in a Lua double: 100 000 per 100 s, 26 000 per day.
//
// # Time and configuration changes
//
// With the clock behind the stored window, the request is decided as at
// that window's start, and RetryAfter counts the time until the clock
// catches up.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. The counts are what happened, and
// stay (one rule, no choice):
//
//   - Limit: the estimate is compared with the new Limit at once; a count
//     above it counts as Limit.
//   - Window: the state is read two ways, under the Window that wrote it
//     and with both its counts moved into the new Window's window that
//     holds the old current window's start; a shorter Window allows what
//     either allows, a longer one only what both allow. An allowed
//     request writes the second.
//
// So a raised limit never denies a request the old one would have
// allowed, and a lowered one never allows a request the old one would
// have denied (the conformance suite checks both, on every store, with
// the two interleaved). Either way the state stops counting when it would
// have under the configuration that wrote it. State the limiter did not
// write is refused with core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) takes n off the current window's count, then off the
// previous window's, never below zero. Refunded right after the request it
// undoes, it restores the state exactly; cost counted two windows ago or
// earlier no longer weighs anything and cannot be refunded.
package slidingcounter

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/params"
)

//go:embed slidingcounter.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	limit = iota
	window
)

var spec = engine.NewSpec(engine.Spec{
	Name: "slidingcounter",
	Params: []engine.Param{
		limit:  {Name: "limit", Field: "Limit", Kind: engine.Count},
		window: {Name: "window_us", Field: "Window", Kind: engine.Micros},
	},
	Lua:        lua,
	Step:       step,
	StateLen:   stateLen,
	Bound:      bound,
	LooseBound: looseBound,
	MaxWait:    maxWait,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:sc:"

// Config configures a sliding window counter.
type Config struct {
	// Limit is the most requests (sum of costs) the estimate allows per
	// Window.
	Limit int64
	// Window is the length of each fixed window, a whole number of
	// microseconds.
	Window time.Duration
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock is used (the Redis server's TIME).
	Clock core.Clock
}

// New returns a sliding window counter keeping its state in store. It
// sends nothing to the store; an error wraps core.ErrInvalidConfig and
// names the field. Remaining is the number of requests of cost 1 the
// estimate still allows now; Window is the configured Window.
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
	if cfg.Limit > params.MaxSpan/l.Param(window) {
		return l, fmt.Errorf("%w: Limit*Window: %d x %v is too large to compute exactly (at most 2^51 µs)", core.ErrInvalidConfig, cfg.Limit, cfg.Window)
	}
	l.Window = cfg.Window
	return l, nil
}
