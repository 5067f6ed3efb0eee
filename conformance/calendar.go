package conformance

import (
	"context"
	"fmt"
	"time"
	_ "time/tzdata" // the zones below, on any machine

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// calendarZones are time zones with daylight saving time (by an hour, by
// half an hour), one without, and UTC.
var calendarZones = []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"}

// calendarStarts are moments near the clock changes of 2026: Europe on
// March 29 and October 25, the US on March 8 and November 1, Lord Howe on
// April 5 and October 4; and a month's end.
var calendarStarts = []time.Time{
	time.Date(2026, 3, 28, 20, 0, 0, 0, time.UTC),
	time.Date(2026, 10, 24, 20, 0, 0, 0, time.UTC),
	time.Date(2026, 3, 7, 22, 0, 0, 0, time.UTC),
	time.Date(2026, 10, 31, 22, 0, 0, 0, time.UTC),
	time.Date(2026, 4, 4, 10, 0, 0, 0, time.UTC),
	time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC),
	time.Date(2026, 2, 28, 21, 0, 0, 0, time.UTC),
}

// runCalendar drives a calendar fixed window (fixedwindow.NewCalendar) of
// a random period and zone, from near a clock change, on the store under
// test and on the reference: the same decisions on both, at most Limit per
// calendar period, and a denial's RetryAfter ends exactly with its period.
// A calendar window decides at its limiter's clock, in every mode.
func runCalendar(t *rapid.T, h Harness) {
	zone := rapid.SampledFrom(calendarZones).Draw(t, "zone")
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", zone, err)
	}
	cfg := fixedwindow.CalendarConfig{
		Limit:    rapid.Int64Range(1, 5).Draw(t, "limit"),
		Period:   rapid.SampledFrom([]fixedwindow.Period{fixedwindow.Day, fixedwindow.Week, fixedwindow.Month}).Draw(t, "period"),
		Location: loc,
		Prefix:   newPrefix() + "cal:",
	}
	clock := fakeclock.New(rapid.SampledFrom(calendarStarts).Draw(t, "start").Add(time.Duration(rapid.Int64Range(0, int64(8*time.Hour)).Draw(t, "offset"))).Truncate(time.Microsecond))
	if h.SetTime != nil {
		h.SetTime(clock.Now())
	}
	cfg.Clock = clock
	ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := fixedwindow.NewCalendar(ref, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fixedwindow.NewCalendar(h.Runner, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("calendar: limit %d per %v in %s from %v", cfg.Limit, cfg.Period, zone, clock.Now().In(loc))
	ctx := context.Background()
	// counted[key][period start] is what was allowed in each period;
	// high[key] the key's time (see runMachine).
	counted := map[string]map[int64]int64{}
	high := map[string]int64{}
	keyGen := rapid.SampledFrom(keys[:3])
	actions := map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			clock.Advance(time.Duration(rapid.OneOf(
				rapid.Int64Range(1, int64(time.Hour)),
				rapid.Int64Range(1, int64(36*time.Hour)),
			).Draw(t, "step")).Truncate(time.Microsecond))
		},
		"allow": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			n := rapid.Int64Range(1, cfg.Limit).Draw(t, "n")
			if h.SetTime != nil {
				h.SetTime(clock.Now())
			}
			what := fmt.Sprintf("AllowN(%q, %d) at %v", key, n, clock.Now().In(loc))
			dw, ew := want.AllowN(ctx, key, n)
			dg, eg := got.AllowN(ctx, key, n)
			compare(t, what, dw, ew, dg, eg)
			if ew != nil {
				t.Fatalf("%s: %v", what, ew)
			}
			at := max(clock.Now().UnixMicro(), high[key])
			start, end := calendarPeriod(time.UnixMicro(at).In(loc), cfg.Period)
			if !dw.Allowed {
				if want := end.Sub(clock.Now()); dw.RetryAfter != want && at == clock.Now().UnixMicro() {
					t.Fatalf("%s: RetryAfter %v; the period ends in %v", what, dw.RetryAfter, want)
				}
				return
			}
			high[key] = at
			if counted[key] == nil {
				counted[key] = map[int64]int64{}
			}
			counted[key][start.UnixMicro()] += n
			if c := counted[key][start.UnixMicro()]; c > cfg.Limit {
				t.Fatalf("%s: %d allowed in the %v from %v, limit %d", what, c, cfg.Period, start, cfg.Limit)
			}
		},
		"peek": func(t *rapid.T) {
			key := keyGen.Draw(t, "key")
			dw, ew := want.Peek(ctx, key)
			dg, eg := got.Peek(ctx, key)
			compare(t, fmt.Sprintf("Peek(%q) at %v", key, clock.Now().In(loc)), dw, ew, dg, eg)
		},
	}
	t.Repeat(actions)
}

// calendarPeriod is the period of kind p holding t, computed apart from
// the package's own code: by walking midnights.
func calendarPeriod(t time.Time, p fixedwindow.Period) (start, end time.Time) {
	midnight := func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	}
	start = midnight(t)
	switch p {
	case fixedwindow.Week:
		for start.Weekday() != time.Monday {
			start = midnight(start.Add(-time.Hour))
		}
	case fixedwindow.Month:
		for start.Day() != 1 {
			start = midnight(start.Add(-time.Hour))
		}
	}
	end = start
	for {
		end = midnight(end.Add(26 * time.Hour))
		if p == fixedwindow.Day || p == fixedwindow.Week && end.Weekday() == time.Monday || p == fixedwindow.Month && end.Day() == 1 {
			return start, end
		}
	}
}
