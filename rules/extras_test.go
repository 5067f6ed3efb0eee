package rules_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/rules"
)

const extrasConfig = `
domain: x
descriptors:
  - key: tb
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: tokenbucket, burst: 3}
  - key: gcra
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: gcra, burst: 3, carry: available}
  - key: leaky
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: leakybucket, burst: 3}
  - key: log
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: slidinglog}
  - key: counter
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: slidingcounter}
  - key: thirty
    rate_limit: {period: 30s, requests_per_unit: 3}
  - key: paris
    rate_limit: {unit: day, requests_per_unit: 3, calendar: Europe/Paris}
  - key: login
    rate_limit: {period: 1s, requests_per_unit: 1, penalty: 1m}
`

// Each of ratekit's algorithms, chosen per rule: 3 pass, the 4th is
// over, with the limit each reports.
func TestExtrasAlgorithms(t *testing.T) {
	r, _ := newRules(t, extrasConfig, rules.Options{})
	for _, tt := range []struct {
		key, algorithm string
	}{
		{"tb", "tokenbucket"}, {"gcra", "gcra"}, {"leaky", "leakybucket"},
		{"log", "slidinglog"}, {"counter", "slidingcounter"}, {"thirty", "fixedwindow"}, {"paris", "fixedwindow"},
	} {
		for i := range 4 {
			s := decide(t, r, "x", 1, desc(tt.key+"=a")).Statuses[0]
			if s.Rule.Algorithm != tt.algorithm || s.Rule.Limits[0].Params.Algorithm() != tt.algorithm {
				t.Fatalf("%s: algorithm %s (%s), want %s", tt.key, s.Rule.Algorithm, s.Rule.Limits[0].Params, tt.algorithm)
			}
			if (i < 3) != (s.Code == rules.OK) || s.Decision.Limit != 3 {
				t.Fatalf("%s, request %d: %+v", tt.key, i, s)
			}
		}
	}
}

// A period instead of a unit: epoch-aligned windows of 30 s.
func TestExtrasPeriod(t *testing.T) {
	r, clock := newRules(t, extrasConfig, rules.Options{})
	clock.Advance(40 * time.Second)
	s := decide(t, r, "x", 1, desc("thirty=a")).Statuses[0]
	if s.Rule.Window != 30*time.Second || s.Unit != rules.UnitUnknown || s.ResetAfter != 20*time.Second {
		t.Errorf("period 30s at :40: %+v", s)
	}
}

// A calendar day in Paris ends at midnight Paris time.
func TestExtrasCalendar(t *testing.T) {
	r, clock := newRules(t, extrasConfig, rules.Options{})
	// start is 00:00 UTC, 01:00 in Paris in December: the Paris day ends
	// in 23 hours.
	s := decide(t, r, "x", 1, desc("paris=a")).Statuses[0]
	if s.ResetAfter != 23*time.Hour {
		t.Errorf("Paris day at 01:00: ResetAfter %v, want 23h", s.ResetAfter)
	}
	for range 2 {
		decide(t, r, "x", 1, desc("paris=a"))
	}
	clock.Advance(23 * time.Hour)
	if s := decide(t, r, "x", 1, desc("paris=a")).Statuses[0]; s.Code != rules.OK || s.Remaining != 2 {
		t.Errorf("the next Paris day: %+v", s)
	}
}

// A penalty blocks the descriptor's key after a denial, past its window.
func TestExtrasPenalty(t *testing.T) {
	r, clock := newRules(t, extrasConfig, rules.Options{})
	if s := decide(t, r, "x", 1, desc("login=ann")).Statuses[0]; s.Code != rules.OK {
		t.Fatalf("first login: %+v", s)
	}
	if s := decide(t, r, "x", 1, desc("login=ann")).Statuses[0]; s.Code != rules.OverLimit || !s.Decision.Blocked {
		t.Fatalf("second login: %+v", s)
	}
	clock.Advance(5 * time.Second)
	if s := decide(t, r, "x", 1, desc("login=ann")).Statuses[0]; s.Code != rules.OverLimit || !s.Decision.Blocked || s.ResetAfter < 50*time.Second {
		t.Fatalf("5 s later, blocked for a minute: %+v", s)
	}
	if s := decide(t, r, "x", 1, desc("login=bob")).Statuses[0]; s.Code != rules.OK {
		t.Fatalf("another key: %+v", s)
	}
	clock.Advance(time.Minute)
	if s := decide(t, r, "x", 1, desc("login=ann")).Statuses[0]; s.Code != rules.OK {
		t.Fatalf("after the penalty: %+v", s)
	}
}
