package fixedwindow

import (
	"archive/zip"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// zoneDatabase loads every zone of Go's time zone database
// ($(go env GOROOT)/lib/time/zoneinfo.zip), from that file, so that the
// zones do not depend on the machine's; a zone whose data another zone
// already has (a link, such as US/Eastern to America/New_York) is
// loaded once.
func zoneDatabase(t *testing.T) []*time.Location {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip")
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var locs []*time.Location
	seen := map[string]bool{}
	for _, f := range r.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(data)] {
			continue
		}
		seen[string(data)] = true
		loc, err := time.LoadLocationFromTZData(f.Name, data)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		locs = append(locs, loc)
	}
	if len(locs) < 300 {
		t.Fatalf("%s holds %d zones, want the whole database", path, len(locs))
	}
	return locs
}

// A civil date, as days since 1970-01-01.
type civil int64

func dateOf(u time.Time) civil {
	y, m, d := u.Date()
	return civilDate(y, m, d)
}

func civilDate(y int, m time.Month, d int) civil {
	return civil(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func (c civil) time() time.Time { return time.Unix(int64(c)*86400, 0).UTC() }

// firstDate is the first date of the period of kind p that holds date c,
// and nextFirst the first date of the period after it, computed on dates
// alone.
func firstDate(t *testing.T, p Period, c civil) civil {
	switch p {
	case Day:
		return c
	case Week:
		return c - civil((int(c.time().Weekday())+6)%7)
	case Month:
		y, m, _ := c.time().Date()
		return civilDate(y, m, 1)
	}
	t.Fatalf("no rule for the first date of a %v", p)
	return 0
}

func nextFirst(t *testing.T, p Period, c civil) civil {
	switch p {
	case Day:
		return c + 1
	case Week:
		return c + 7
	case Month:
		y, m, _ := c.time().Date()
		return civilDate(y, m+1, 1)
	}
	t.Fatalf("no rule for the period after a %v", p)
	return 0
}

// transitions lists the instants in [from, to) where loc's offset
// changes, sorted.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var list []time.Time
	for u := from.In(loc); ; {
		_, end := u.ZoneBounds()
		if !end.IsZero() && !end.After(u) {
			// golang/go#81583: on the last UTC day of a leap year that
			// the zone's footer rule serves, the end is at or before u;
			// no rule changes zones on that day.
			_, end = u.Add(24 * time.Hour).ZoneBounds()
		}
		if end.IsZero() || !end.Before(to) {
			return list
		}
		// ZoneBounds also ends zones where only the name changes, and
		// at year boundaries where a footer rule serves the year.
		_, before := end.Add(-time.Second).Zone()
		if _, after := end.Zone(); after != before {
			list = append(list, end)
		}
		u = end
	}
}

// Every period of every zone, near each clock change from 1970 to 2040:
// a window starts at the first instant whose local date is its period's
// first date or later (midnight, or, where the clocks skip midnight, the
// moment they jump; where they go back across midnight, the first of the
// date's midnights), ends where the next window begins, and holds the
// instant it was asked for; windows neither overlap nor leave gaps.
func TestPeriodsInEveryZone(t *testing.T) {
	var periods []Period
	for p := Day; !strings.HasPrefix(p.String(), "Period("); p++ {
		periods = append(periods, p)
	}
	from, to := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	checked := 0
	for _, loc := range zoneDatabase(t) {
		// Transitions a little beyond the years, for the lookback of
		// windows that end after them.
		zone := transitions(loc, from.AddDate(0, -2, 0), to.AddDate(0, 2, 0))
		// isFirst reports whether u is the first instant whose local
		// date is c or later: it is, and no earlier one is. Local time
		// only rises between zone changes, so the latest date before u
		// is the one just before u or just before a change; offsets are
		// under a day, so anything three days earlier is before c.
		isFirst := func(u time.Time, c civil) bool {
			if dateOf(u) < c || dateOf(u.Add(-time.Nanosecond)) >= c {
				return false
			}
			back := u.Add(-72 * time.Hour)
			i := sort.Search(len(zone), func(i int) bool { return !zone[i].Before(back) })
			for ; i < len(zone) && zone[i].Before(u); i++ {
				if dateOf(zone[i].Add(-time.Nanosecond)) >= c {
					return false
				}
			}
			return true
		}
		// Instants to ask for: on both sides of every change in the
		// years that moves the local date (where midnight is skipped or
		// repeated), and of every eighth other change, so that the test
		// stays fast under -race; and one instant in every zone.
		var at []time.Time
		for i, x := range zone {
			before := x.Add(-time.Second)
			if !x.Before(from) && x.Before(to) && (i%8 == 0 || dateOf(before) != dateOf(x)) {
				at = append(at, before, x)
			}
		}
		at = append(at, time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC))
		for _, p := range periods {
			for _, u := range at {
				u = u.In(loc)
				start, end := periodOf(u, p)
				first := firstDate(t, p, dateOf(start))
				switch {
				case u.Before(start) || !u.Before(end):
					t.Fatalf("%v in %v at %v: [%v, %v) does not hold it", p, loc, u, start, end)
				case !isFirst(start, first):
					t.Fatalf("%v in %v at %v: starts at %v, not at the first instant of %v", p, loc, u, start, first.time().Format(time.DateOnly))
				case !isFirst(end, nextFirst(t, p, first)):
					t.Fatalf("%v in %v at %v: [%v, %v) does not end at the first instant of %v", p, loc, u, start, end, nextFirst(t, p, first).time().Format(time.DateOnly))
				}
				// The windows of its first and last instants are this
				// one, and the next begins where it ends.
				for _, v := range []time.Time{start, end.Add(-time.Nanosecond)} {
					if s, e := periodOf(v, p); !s.Equal(start) || !e.Equal(end) {
						t.Fatalf("%v in %v: at %v [%v, %v), at %v [%v, %v)", p, loc, u, start, end, v, s, e)
					}
				}
				if s, _ := periodOf(end, p); !s.Equal(end) {
					t.Fatalf("%v in %v at %v: [%v, %v), then the next window starts at %v", p, loc, u, start, end, s)
				}
				checked++
			}
		}
	}
	t.Logf("%d windows checked", checked)
}

// Where a date has no midnight, or two, or none at all.
func TestDateStart(t *testing.T) {
	for _, c := range []struct {
		zone string
		date string
		want time.Time // UTC
	}{
		{"Europe/Paris", "2026-10-25", time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)},
		// 24:00 becomes 01:00: the day starts at the jump (time.Date
		// gives 23:00 the day before).
		{"America/Havana", "2026-03-08", time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{"America/Santiago", "2026-09-06", time.Date(2026, 9, 6, 4, 0, 0, 0, time.UTC)},
		// 00:01 became 23:01 the day before: the first of two midnights.
		{"America/St_Johns", "2010-11-07", time.Date(2010, 11, 7, 2, 30, 0, 0, time.UTC)},
		// Skipped whole: the next date's start.
		{"Pacific/Apia", "2011-12-30", time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC)},
		{"Pacific/Kwajalein", "1993-08-21", time.Date(1993, 8, 21, 12, 0, 0, 0, time.UTC)},
	} {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Fatal(err)
		}
		d, err := time.Parse(time.DateOnly, c.date)
		if err != nil {
			t.Fatal(err)
		}
		if got := dateStart(d.Year(), d.Month(), d.Day(), loc); !got.Equal(c.want) {
			t.Errorf("dateStart(%s) in %s = %v, want %v", c.date, c.zone, got.UTC(), c.want)
		}
	}
	// After the first midnight of 2010-11-07, St. John's read 2010-11-06
	// again for an hour: that hour is in the day of November 7.
	stJohns, err := time.LoadLocation("America/St_Johns")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2010, 11, 7, 3, 0, 0, 0, time.UTC).In(stJohns)
	start, end := periodOf(at, Day)
	if want := time.Date(2010, 11, 7, 2, 30, 0, 0, time.UTC); !start.Equal(want) || !end.Equal(want.Add(25*time.Hour)) {
		t.Errorf("the day at %v: [%v, %v), want [%v, %v)", at, start, end, want, want.Add(25*time.Hour))
	}
}
