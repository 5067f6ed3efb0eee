package rules_test

import (
	"strings"
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

const alsoConfig = `
domain: x
descriptors:
  - key: api
    rate_limit:
      name: api
      unit: second
      requests_per_unit: 3
      also:
        - unit: minute
          requests_per_unit: 5
          name: api_per_minute
        - period: 30s
          requests_per_unit: 100
          algorithm: tokenbucket
  - key: other
    rate_limit: {unit: minute, requests_per_unit: 2}
`

// Several limits of one rule (also) are decided at once: counted by all
// or none, the status reporting the limit that binds.
func TestExtrasSeveralLimits(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		r, clock := newRules(t, alsoConfig, rules.Options{Atomic: atomic})
		for i := range 3 {
			s := decide(t, r, "x", 1, desc("api=k")).Statuses[0]
			if s.Code != rules.OK || s.Unit != rules.Second || s.RequestsPerUnit != 3 || s.Remaining != uint32(2-i) || s.Name != "api" || s.Limit != 0 {
				t.Fatalf("atomic %v, request %d: %+v", atomic, i, s)
			}
		}
		s := decide(t, r, "x", 1, desc("api=k")).Statuses[0]
		if s.Code != rules.OverLimit || s.Unit != rules.Second || s.Name != "api" || s.Limit != 0 {
			t.Fatalf("atomic %v, 4th in a second: %+v", atomic, s)
		}
		clock.Advance(time.Second)
		// 3 of the minute's 5 used: the minute binds now.
		s = decide(t, r, "x", 1, desc("api=k")).Statuses[0]
		if s.Code != rules.OK || s.Unit != rules.Minute || s.RequestsPerUnit != 5 || s.Remaining != 1 || s.Name != "api_per_minute" || s.Limit != 1 {
			t.Fatalf("atomic %v, next second: %+v", atomic, s)
		}
		decide(t, r, "x", 1, desc("api=k"))
		clock.Advance(time.Second)
		s = decide(t, r, "x", 1, desc("api=k")).Statuses[0]
		if s.Code != rules.OverLimit || s.Unit != rules.Minute || s.Remaining != 0 || s.Name != "api_per_minute" || s.Limit != 1 {
			t.Fatalf("atomic %v, minute spent: %+v", atomic, s)
		}
		// The denied requests counted nowhere: the second's limit has 3 left.
		clock.Advance(time.Minute)
		for i := range 3 {
			s := decide(t, r, "x", 1, desc("api=k"), desc("other=o")).Statuses[0]
			if s.Code != rules.OK {
				t.Fatalf("atomic %v, next minute, request %d: %+v", atomic, i, s)
			}
		}
	}
}

func TestExtrasSeveralLimitsErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      also: {unit: day}\n", "f.yaml:7: descriptors[0].rate_limit.also: also is a list of limits"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      also:\n        - unit: day\n          requests_per_unit: 0\n", "f.yaml:8: descriptors[0].rate_limit.also[0].requests_per_unit: a rule of several limits (also) has at least 1 request per unit in each"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      also:\n        - unit: day\n          requests_per_unit: 5\n          replaces: [{name: y}]\n", "f.yaml:10: descriptors[0].rate_limit.also[0].replaces: config error, unknown key 'replaces'"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      name: x\n      unit: second\n      requests_per_unit: 1\n      also:\n        - unit: day\n          requests_per_unit: 5\n          name: x\n", "f.yaml:11: descriptors[0].rate_limit.also[0].name: two limits of one rule are named 'x'"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      also:\n        - unit: eon\n          requests_per_unit: 5\n", "f.yaml:8: descriptors[0].rate_limit.also[0].unit: invalid rate limit unit 'eon'"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      also:\n        - unit: day\n          requests_per_unit: 5\n", "an unlimited rule takes none of ratekit's keys (also)"},
	} {
		_, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: []byte(tt.yaml)}}, rules.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q in it", err, tt.want)
		}
	}
}
