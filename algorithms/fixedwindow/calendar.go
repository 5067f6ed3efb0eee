package fixedwindow

import (
	"fmt"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// Period is the calendar period of a CalendarConfig. A period starts at
// the first instant of its first local date: midnight, or, where the
// clocks skip midnight (America/Havana, America/Santiago: 24:00 becomes
// 01:00), the moment they jump. It ends where the next period starts.
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
	// clocks change by an hour. nil means UTC.
	Location *time.Location
	// Prefix is prepended to every storage key, DefaultPrefix when empty.
	// It must not contain '{' or '}'.
	Prefix string
	// Clock gives the time of every decision; nil means the system clock
	// of this process. A calendar window never decides at the store's
	// clock: the time zone's rules live here, not in Redis. In a
	// policy (ratekit.NewPolicy) every limit then needs a Clock (see ratekit.Limit).
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
	l, err := calendarLimit(cfg)
	if err != nil {
		return nil, err
	}
	clock := cfg.Clock
	if clock == nil {
		clock = core.ClockFunc(time.Now)
	}
	return engine.Build[*ratekit.Limiter](store, clock, l)
}

// NewCalendarParams returns cfg's parameters, to give with a request
// (core.Request.Params) to a fixed window limiter, which then decides it
// as NewCalendar's would: a limiter built by NewCalendar, or one built by
// New with a Clock (a calendar's periods follow a clock in this process).
// It checks cfg as NewCalendar does, with the same errors; cfg.Prefix and
// cfg.Clock must be empty: they are the limiter's.
func NewCalendarParams(cfg CalendarConfig) (core.Params, error) {
	l, err := calendarLimit(cfg)
	return spec.NewParams(cfg.Prefix, cfg.Clock, l, err)
}

// calendarLimit checks cfg and returns its limit.
func calendarLimit(cfg CalendarConfig) (engine.Limit, error) {
	if cfg.Period < Day || cfg.Period > Month {
		return engine.Limit{}, fmt.Errorf("%w: fixedwindow: Period must be Day, Week or Month, got %v", core.ErrInvalidConfig, cfg.Period)
	}
	loc := cfg.Location
	if loc == nil {
		loc = time.UTC
	}
	l, err := spec.Limit(cfg.Prefix, DefaultPrefix, cfg.Limit, []int64{
		limit:         cfg.Limit,
		window:        int64(31 * 24 * time.Hour), // the longest period; set for each call
		calendarStart: 0,
		aligned:       0,
	})
	if err != nil {
		return engine.Limit{}, err
	}
	l.Schedule = &calendar{period: cfg.Period, loc: loc}
	l.Window = cfg.Period.nominal()
	return l, nil
}

// calendar is a calendar window's schedule: the period that holds each
// call's time sets the window's start and length.
type calendar struct {
	period Period
	loc    *time.Location
}

// Set returns p with the window and start of a call at now.
func (c *calendar) Set(now int64, p engine.Args) engine.Args {
	start, end := periodOf(time.UnixMicro(now).In(c.loc), c.period)
	p[window] = end.UnixMicro() - start.UnixMicro()
	p[calendarStart] = start.UnixMicro()
	return p
}

// String describes the schedule: "Calendar: month in Europe/Paris".
func (c *calendar) String() string {
	return fmt.Sprintf("Calendar: %v in %v", c.period, c.loc)
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
// location: from the first instant of its first local date to the first
// instant of the next period's.
func periodOf(t time.Time, p Period) (start, end time.Time) {
	y, m, d := t.Date()
	loc := t.Location()
	months, days := time.Month(0), 1 // from a period's first date to the next's
	switch p {
	case Week:
		d -= (int(t.Weekday()) + 6) % 7 // back to Monday
		days = 7
	case Month:
		d, months, days = 1, 1, 0
	}
	start, end = dateStart(y, m, d, loc), dateStart(y, m+months, d+days, loc)
	// Where the clocks go back across midnight, the earlier date shows
	// again after the next one has begun: t is then in a later period.
	for !t.Before(end) {
		m, d = m+months, d+days
		start, end = end, dateStart(y, m+months, d+days, loc)
	}
	return start, end
}

// dateStart returns the first instant whose local date in loc is y-m-d or
// later (time.Date normalizes the date): the date's midnight; where the
// clocks skip midnight (America/Havana: 24:00 becomes 01:00), the moment
// they jump; where they go back across it (America/St_Johns until 2011:
// 00:01 became 23:01 the day before), the first of the date's midnights;
// where the date is skipped whole (Pacific/Apia, 2011-12-30), the first
// instant of the next. time.Date gives none of the last three: for a
// skipped midnight it may return 23:00 of the day before.
func dateStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	// The date's midnight as a local clock reads it, in seconds.
	midnight := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
	// Offsets are under a day, so nothing a day earlier reads as late;
	// within one zone the local clock reads the instant plus its offset.
	u := time.Unix(midnight-day, 0).In(loc)
	for {
		_, offset := u.Zone()
		first := max(u.Unix(), midnight-int64(offset))
		zoneEnd := zoneEnd(u)
		if zoneEnd.IsZero() || first < zoneEnd.Unix() {
			return time.Unix(first, 0).In(loc)
		}
		u = zoneEnd
	}
}

const day = 24 * 60 * 60 // seconds

// zoneEnd returns when the zone in effect at u ends (zero: never), as
// u.ZoneBounds does, but never at or before u. ZoneBounds reports an end
// at or before u on the last UTC day of a leap year that the zone's
// footer rule serves (golang/go#81583, open in Go 1.26): that end is no
// change of zone, and the zone a day later, which such a rule never
// changes in between, says where it really ends.
func zoneEnd(u time.Time) time.Time {
	_, end := u.ZoneBounds()
	if end.IsZero() || end.After(u) {
		return end
	}
	start, end := u.Add(day * time.Second).ZoneBounds()
	switch {
	case start.After(u):
		return start
	case end.After(u):
		return end
	}
	return time.Time{}
}
