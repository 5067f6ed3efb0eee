package fixedwindow

import (
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// Period is the calendar period of a CalendarConfig.
type Period int

const (
	// Day runs from midnight to midnight.
	Day Period = iota + 1
	// Week runs from Monday midnight to Monday midnight (ISO 8601).
	Week
	// Month runs from midnight on its first day to midnight on the next
	// month's first day.
	Month
)

// String names the period: "day", "week" or "month".
func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return fmt.Sprintf("Period(%d)", int(p))
}

// CalendarConfig configures a fixed window counter whose windows are
// calendar periods.
type CalendarConfig struct {
	// Limit is the most requests (sum of costs) allowed in one period.
	Limit int64
	// Period is Day, Week or Month.
	Period Period
	// Location is the time zone whose calendar the periods follow, with
	// its daylight saving time: a day is 23 or 25 hours long when the
	// clocks change. nil means UTC.
	Location *time.Location
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock gives the time of every decision; nil means the system clock
	// of this process. A calendar window never decides at the store's
	// clock: the time zone's rules live here, not in Redis. In a
	// ratekit.Policy every limit then needs a Clock (see ratekit.Limit).
	Clock core.Clock
}

// NewCalendar returns a fixed window counter whose windows are the
// calendar periods of cfg.Period in cfg.Location: at most Limit requests
// from one midnight to the next (or per week, or per month), whatever the
// time of the first request. RetryAfter and ResetAfter count the time
// until the period ends, and Window is the period's nominal length (24
// hours, 7 days, 30 days). An error wraps core.ErrInvalidConfig and names
// the field.
//
// The limiter is a fixed window counter like New's, and reads the same
// state: one built with New over the same prefix keeps its window until
// that window ends, then the calendar's periods take over.
func NewCalendar(store core.ScriptRunner, cfg CalendarConfig) (*ratekit.Limiter, error) {
	if cfg.Period < Day || cfg.Period > Month {
		return nil, fmt.Errorf("%w: fixedwindow: Period must be Day, Week or Month, got %v", core.ErrInvalidConfig, cfg.Period)
	}
	loc := cfg.Location
	if loc == nil {
		loc = time.UTC
	}
	clock := cfg.Clock
	if clock == nil {
		clock = core.ClockFunc(time.Now)
	}
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Limit, []int64{
		limit:         cfg.Limit,
		window:        int64(31 * 24 * time.Hour), // the longest period; set for each call
		calendarStart: 0,
	})
	if err != nil {
		return nil, err
	}
	period := cfg.Period
	l.Schedule = func(now int64, p []int64) {
		start, end := periodOf(time.UnixMicro(now).In(loc), period)
		p[window] = end.UnixMicro() - start.UnixMicro()
		p[calendarStart] = start.UnixMicro()
	}
	l.Window = period.nominal()
	return engine.Build[*ratekit.Limiter](store, clock, l)
}

// nominal is the period's length as a Decision's Window says it: a day
// of 24 hours, a week of 7 days, a month of 30 days, whatever the length
// of the period a decision falls in.
func (p Period) nominal() time.Duration {
	switch p {
	case Week:
		return 7 * 24 * time.Hour
	case Month:
		return 30 * 24 * time.Hour
	}
	return 24 * time.Hour
}

// periodOf returns the calendar period of kind p that holds t, in t's
// location.
func periodOf(t time.Time, p Period) (start, end time.Time) {
	y, m, d := t.Date()
	loc := t.Location()
	switch p {
	case Week:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		start = time.Date(y, m, d-back, 0, 0, 0, 0, loc)
		end = time.Date(y, m, d-back+7, 0, 0, 0, 0, loc)
	case Month:
		start = time.Date(y, m, 1, 0, 0, 0, 0, loc)
		end = time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	default:
		start = time.Date(y, m, d, 0, 0, 0, 0, loc)
		end = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
	// Where a zone skips midnight, time.Date normalizes it to the first
	// time that exists, which t is never before.
	return start, end
}
