package rules

import (
	"strings"
	"time"
)

// Unit is the unit of a rule's requests_per_unit. Its numbers are those of
// envoy's RateLimitResponse.RateLimit.Unit, so a server converts either
// way with a cast; envoy.type.v3.RateLimitUnit, which a request's limit
// override uses, has the same numbers but no Week.
type Unit int32

// The units, with envoyproxy/ratelimit's windows: every window starts at
// a whole multiple of its length since the Unix epoch, so a Week starts
// on a Thursday at 00:00 UTC, and a Month is 30 days, a Year 365.
const (
	UnitUnknown Unit = 0
	Second      Unit = 1 // 1 s
	Minute      Unit = 2 // 60 s
	Hour        Unit = 3 // 3,600 s
	Day         Unit = 4 // 86,400 s
	Month       Unit = 5 // 30 days
	Year        Unit = 6 // 365 days
	Week        Unit = 7 // 7 days
)

var unitNames = [...]string{"unknown", "second", "minute", "hour", "day", "month", "year", "week"}

var unitLengths = [...]time.Duration{0, time.Second, time.Minute, time.Hour, 24 * time.Hour,
	30 * 24 * time.Hour, 365 * 24 * time.Hour, 7 * 24 * time.Hour}

// String returns the unit as a rule writes it: "second", "minute", ...,
// "unknown" for UnitUnknown or a number that is no unit.
func (u Unit) String() string {
	if u < 0 || int(u) >= len(unitNames) {
		return "unknown"
	}
	return unitNames[u]
}

// Duration returns the length of the unit's window, 0 for UnitUnknown or
// a number that is no unit.
func (u Unit) Duration() time.Duration {
	if u < 0 || int(u) >= len(unitLengths) {
		return 0
	}
	return unitLengths[u]
}

// parseUnit reads a unit as envoyproxy/ratelimit does: its name in any
// case. "unknown" is no unit.
func parseUnit(s string) (Unit, bool) {
	for u := Second; int(u) < len(unitNames); u++ {
		if strings.EqualFold(s, unitNames[u]) {
			return u, true
		}
	}
	return UnitUnknown, false
}
