// Package fixedwindow is the fixed window counter of the Redis rate limiter
// guide: at most Limit requests (counting cost) per window of length Window.
// A window starts at the first request after the previous window ended, as
// in the guide, and a denied request counts nothing.
//
// The guide ends a window with the key's TTL and reads no clock. ratekit
// stores the window's start and decides from it and the current time, so the
// TTL only collects garbage and an expired key decides exactly like a stale
// one. Configured alike, it makes the guide's decisions at the same times.
//
// Trade-off: a client can pass Limit requests at the end of one window and
// Limit more at the start of the next, 2 x Limit within one Window.
//
// [NewCalendar] makes windows that are calendar periods instead: a day, a
// week or a month in a time zone ("1,000 per day, reset at midnight
// Europe/Paris"), daylight saving time included.
//
// # Time and configuration changes
//
// A clock behind the window's start keeps the window, and RetryAfter counts
// the time until it ends.
//
// The limit a key is decided against may change: a request's own limits
// (core.Request.Params), a tier, a reloaded rule, old and new processes
// side by side during a rolling deploy. A window counts what happened in
// it, so it keeps its count under any configuration (one rule, no choice):
//
//   - Limit: the count is compared with the new Limit at once (a raised
//     Limit allows the difference now; a lowered one may deny until the
//     window ends). Remaining is never below 0.
//   - Window: the window keeps its start and ends at start + the new
//     Window, or where it was written to end, whichever comes first; the
//     next window has the new length.
//   - Aligned: the window in progress ends as it was written; the next
//     one opens as the new configuration says.
//
// So a raised limit never denies a request the old one would have
// allowed, and a lowered one never allows a request the old one would
// have denied (the conformance suite checks both, on every store, with
// the two interleaved). State the limiter did not write is refused with
// core.ErrCorruptState.
//
// # Refunds
//
// Refund(key, n) takes n off the current window's count, never below zero;
// a window refunded to zero is forgotten, so the next request opens a new
// one. Cost counted in an earlier window cannot be refunded: that window
// is over.
package fixedwindow

import (
	_ "embed"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

//go:embed fixedwindow.lua
var lua string

// The step's parameters, in the order the scripts take them.
const (
	limit = iota
	window
	calendarStart // 0, or a calendar period's start (NewCalendar)
	aligned
)

var spec = engine.NewSpec(engine.Spec{
	Name: "fixedwindow",
	Params: []engine.Param{
		limit:         {Name: "limit", Field: "Limit", Kind: engine.Count},
		window:        {Name: "window_us", Field: "Window", Kind: engine.Micros},
		calendarStart: {Name: "start_us", Field: "Calendar", Kind: engine.Scheduled},
		aligned:       {Name: "aligned", Field: "Aligned", Kind: engine.Choice, Choices: []string{"false", "true"}},
	},
	Lua:        lua,
	Step:       step,
	StateLen:   stateLen,
	Bound:      bound,
	LooseBound: looseBound,
})

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "ratekit:fw:"

// Config configures a fixed window counter.
type Config struct {
	// Limit is the most requests (sum of costs) allowed in one window.
	Limit int64
	// Window is the length of a window, a whole number of microseconds.
	Window time.Duration
	// Aligned starts windows at whole multiples of Window since the Unix
	// epoch (00:00:00 UTC, 1 January 1970), as envoyproxy/ratelimit
	// does: the same for every key, and the window a request falls in is
	// known from its time alone. By default a key's window opens at its
	// first request.
	Aligned bool
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock is used (the Redis server's TIME).
	Clock core.Clock
}

// New returns a fixed window limiter keeping its state in store. It sends
// nothing to the store; an error wraps core.ErrInvalidConfig and names the
// field. Its decisions' Window is the configured Window.
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
		limit:         cfg.Limit,
		window:        int64(cfg.Window),
		calendarStart: 0,
		aligned:       b2i(cfg.Aligned),
	})
	if err != nil {
		return l, err
	}
	l.Window = cfg.Window
	return l, nil
}

// b2i is 1 for true, 0 for false: a Choice of two.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
