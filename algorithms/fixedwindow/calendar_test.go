package fixedwindow_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// 3 per day, reset at midnight in Paris, on the day the clocks go back
// (25 hours long): the quota lasts until local midnight, not 24 hours.
func ExampleNewCalendar() {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	clock := fakeclock.New(time.Date(2026, 10, 25, 0, 30, 0, 0, paris)) // 02:00-03:00 happens twice today
	store, _ := memory.New(memory.WithClock(clock))
	defer store.Close()
	daily, err := fixedwindow.NewCalendar(store, fixedwindow.CalendarConfig{Limit: 3, Period: fixedwindow.Day, Location: paris, Clock: clock})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		d, _ := daily.Allow(ctx, "tenant:7")
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	clock.Advance(24 * time.Hour) // 23:30 the same day: still today
	d, _ := daily.Allow(ctx, "tenant:7")
	fmt.Println(d.Allowed, clock.Now().In(paris).Format("Jan 2 15:04"), "retry after", d.RetryAfter)
	clock.Advance(30 * time.Minute) // midnight: a new day
	d, _ = daily.Allow(ctx, "tenant:7")
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 24h30m0s
	// false Oct 25 23:30 retry after 30m0s
	// true 2
}

// Bad calendar configurations are errors naming the field.
func TestNewCalendarRefuses(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, cfg := range []fixedwindow.CalendarConfig{
		{Limit: 1},
		{Limit: 1, Period: 4},
		{Limit: 1, Period: -1},
		{Limit: 0, Period: fixedwindow.Day},
		{Limit: -5, Period: fixedwindow.Month},
		{Limit: 1, Period: fixedwindow.Week, Prefix: "{x}"},
		// A nil *fakeclock.Clock reads the zero time: refused here, not
		// met with a panic at the first call.
		{Limit: 1, Period: fixedwindow.Day, Clock: (*fakeclock.Clock)(nil)},
	} {
		if _, err := fixedwindow.NewCalendar(s, cfg); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("NewCalendar(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := fixedwindow.NewCalendar(nil, fixedwindow.CalendarConfig{Limit: 1, Period: fixedwindow.Day}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a nil store: %v", err)
	}
}

// Weeks start on Monday and months on the 1st, in the zone given; nil is
// UTC; a month's quota runs to the next month's first midnight.
func TestCalendarPeriods(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct {
		period fixedwindow.Period
		loc    *time.Location
		at     time.Time
		ends   time.Time
	}{
		{fixedwindow.Week, nil, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
		{fixedwindow.Week, ny, time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 0, ny)},
		{fixedwindow.Month, ny, time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, ny)},
		{fixedwindow.Month, ny, time.Date(2026, 3, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, ny)},
		{fixedwindow.Day, ny, time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 0, 0, 0, 0, ny)},
	} {
		clock := fakeclock.New(c.at)
		s, _ := memory.New(memory.WithClock(clock))
		l, err := fixedwindow.NewCalendar(s, fixedwindow.CalendarConfig{Limit: 1, Period: c.period, Location: c.loc, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		l.Allow(context.Background(), "k")
		d, err := l.Allow(context.Background(), "k")
		if err != nil || d.Allowed || !c.at.Add(d.RetryAfter).Equal(c.ends) {
			t.Errorf("%v in %v at %v: %+v, %v; want denied until %v", c.period, c.loc, c.at, d, err, c.ends)
		}
		// Window is the period's nominal length, whatever this one's.
		if want := map[fixedwindow.Period]time.Duration{fixedwindow.Day: 24 * time.Hour, fixedwindow.Week: 7 * 24 * time.Hour, fixedwindow.Month: 30 * 24 * time.Hour}[c.period]; d.Window != want {
			t.Errorf("%v: Window %v, want %v", c.period, d.Window, want)
		}
		s.Close()
	}
}

// In America/Havana the clocks skip midnight: on 2026-03-08, 24:00 of
// March 7 becomes 01:00 of March 8. March 7 is a whole 24 hours, its last
// hour decides like the others, and March 8 starts at the jump.
func TestCalendarDayWithoutMidnight(t *testing.T) {
	havana, err := time.LoadLocation("America/Havana")
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(time.Date(2026, 3, 7, 0, 30, 0, 0, havana))
	s, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := fixedwindow.NewCalendar(s, fixedwindow.CalendarConfig{Limit: 2, Period: fixedwindow.Day, Location: havana, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	const h, m = time.Hour, time.Minute
	for i, c := range []struct {
		advance time.Duration
		want    core.Decision
	}{
		{0, core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 23*h + 30*m, Window: 24 * h}},
		// 23:30 on March 7, half an hour before the jump.
		{23 * h, core.Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: 30 * m, Window: 24 * h}},
		{0, core.Decision{Allowed: false, Limit: 2, Remaining: 0, RetryAfter: 30 * m, ResetAfter: 30 * m, Window: 24 * h}},
		// 01:00 on March 8, a day of 23 hours.
		{30 * m, core.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 23 * h, Window: 24 * h}},
	} {
		clock.Advance(c.advance)
		d, err := l.Allow(context.Background(), "k")
		if err != nil || !reflect.DeepEqual(d, c.want) {
			t.Fatalf("step %d: Allow at %v = %+v, %v; want %+v", i, clock.Now().In(havana), d, err, c.want)
		}
	}
}
