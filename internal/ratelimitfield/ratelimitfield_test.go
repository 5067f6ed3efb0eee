package ratelimitfield_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

func TestFields(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ratelimitfield.Policy("api", 100, time.Minute), `"api";q=100;w=60`},
		{ratelimitfield.Policy("api", 100, 0), `"api";q=100`},
		{ratelimitfield.Policy(`a"b\c`, 1, 1500*time.Millisecond), `"a\"b\\c";q=1;w=2`},
		{ratelimitfield.State("api", 42, 17), `"api";r=42;t=17`},
		{ratelimitfield.State("api", -3, -1), `"api";r=0;t=0`},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
	for d, want := range map[time.Duration]int64{0: 1, time.Nanosecond: 1, time.Second: 1, time.Second + 1: 2, -time.Second: 1} {
		if got := ratelimitfield.RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %d, want %d", d, got, want)
		}
	}
}

// A name is printable ASCII of at most 64 bytes: a Structured Field
// string holds nothing else.
func TestCheckName(t *testing.T) {
	for name, want := range map[string]string{
		"":                      "",
		"api":                   "",
		`a"b\c ~`:               "",
		strings.Repeat("n", 64): "",
		strings.Repeat("n", 65): "longer than 64 bytes",
		"tab\there":             "byte 0x9 is not printable ASCII",
		"caf\u00e9":             "byte 0xc3 is not printable ASCII",
		"del\x7f":               "byte 0x7f is not printable ASCII",
	} {
		var got string
		if err := ratelimitfield.CheckName(name); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckName(%q) = %q, want %q", name, got, want)
		}
	}
}

// A Duration near its largest must not overflow into a negative w or t.
func TestCeilSecondsDoesNotOverflow(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		math.MaxInt64:                   9223372037,
		math.MaxInt64 - time.Second + 2: 9223372036,
		time.Duration(math.MaxInt64) / time.Second * time.Second: 9223372036,
		1500 * time.Millisecond:                                  2,
		-time.Nanosecond:                                         0,
	} {
		if got := ratelimitfield.CeilSeconds(d); got != want {
			t.Errorf("CeilSeconds(%d) = %d, want %d", d, got, want)
		}
	}
	if got, want := ratelimitfield.Policy("api", 1, math.MaxInt64), `"api";q=1;w=9223372037`; got != want {
		t.Errorf("Policy with the largest Window = %s, want %s", got, want)
	}
	if got := ratelimitfield.RetryAfter(math.MaxInt64); got != 9223372037 {
		t.Errorf("RetryAfter(MaxInt64) = %d, want 9223372037", got)
	}
}

// An Integer of more than 15 digits makes the whole field malformed
// (RFC 8941, section 3.3.1), so none is ever written.
func TestIntegersFitStructuredFields(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ratelimitfield.Policy("api", 1<<50, 0), `"api";q=999999999999999`},
		{ratelimitfield.Policy("api", math.MaxInt64, time.Minute), `"api";q=999999999999999;w=60`},
		{ratelimitfield.Policy("api", ratelimitfield.MaxInteger, 0), `"api";q=999999999999999`},
		{ratelimitfield.State("api", 1<<50, math.MaxInt64), `"api";r=999999999999999;t=999999999999999`},
		{ratelimitfield.Integer(-1), "0"},
		{ratelimitfield.Integer(ratelimitfield.MaxInteger + 1), "999999999999999"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
		for _, n := range strings.FieldsFunc(tt.got, func(r rune) bool { return r < '0' || r > '9' }) {
			if len(n) > 15 {
				t.Errorf("%s holds an Integer of %d digits", tt.got, len(n))
			}
		}
	}
}

// t is the seconds until more quota is available: for a denial, when the
// request would pass, never after Retry-After (draft-ietf-httpapi-
// ratelimit-headers-10: Retry-After "SHOULD NOT reference a point in time
// earlier than the reset parameter").
func TestReset(t *testing.T) {
	for _, tt := range []struct {
		name  string
		d     core.Decision
		retry int64 // the response's Retry-After, 0 for none
		want  int64
	}{
		{"allowed: full again", core.Decision{Allowed: true, Remaining: 1, ResetAfter: 5500 * time.Millisecond}, 0, 6},
		{"allowed and full", core.Decision{Allowed: true, Remaining: 2}, 0, 0},
		{"denied: when the request passes, not when full", core.Decision{Remaining: 0, RetryAfter: 6 * time.Second, ResetAfter: 12 * time.Second}, 6, 6},
		{"denied, never 0", core.Decision{RetryAfter: time.Millisecond, ResetAfter: time.Second}, 1, 1},
		{"allowed limit of a denied response: capped at Retry-After", core.Decision{Allowed: true, Remaining: 900, ResetAfter: 24 * time.Hour}, 3, 3},
		{"allowed limit of a denied response, sooner than Retry-After", core.Decision{Allowed: true, Remaining: 9, ResetAfter: time.Second}, 3, 1},
		{"denied limit, another limit waits longer", core.Decision{RetryAfter: 2 * time.Second, ResetAfter: 10 * time.Second}, 5, 2},
	} {
		if got := (ratelimitfield.Limit{Name: "x", Decision: tt.d}).Reset(tt.retry); got != tt.want {
			t.Errorf("%s: Reset(%d) = %d, want %d", tt.name, tt.retry, got, tt.want)
		}
	}
	// The denial of ExampleNew: t and Retry-After agree.
	d := core.Decision{Limit: 2, RetryAfter: 6 * time.Second, ResetAfter: 12 * time.Second}
	retry := ratelimitfield.RetryAfter(d.RetryAfter)
	_, states := ratelimitfield.Fields([]ratelimitfield.Limit{{Name: "api", Decision: d}}, retry)
	if got, want := states[0], `"api";r=0;t=6`; got != want || retry != 6 {
		t.Errorf("denial: RateLimit %s with Retry-After %d, want %s with 6", got, retry, want)
	}
}

// A single limiter's decision is one limit, named by the caller, whose w
// is the caller's window or else the decision's own.
func TestLimitsOfOneLimiter(t *testing.T) {
	d := core.Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: time.Second, Window: 2 * time.Second}
	for _, tt := range []struct {
		window time.Duration
		want   string
	}{
		{0, `"api";q=10;w=2`},
		{-time.Second, `"api";q=10;w=2`},
		{time.Hour, `"api";q=10;w=3600`},
	} {
		ls := ratelimitfield.Limits("api", tt.window, d)
		pol, st := ratelimitfield.Fields(ls, 0)
		if len(ls) != 1 || !slices.Equal(pol, []string{tt.want}) || !slices.Equal(st, []string{`"api";r=9;t=1`}) {
			t.Errorf("window %v: RateLimit-Policy %q, RateLimit %q; want [%s] and [\"api\";r=9;t=1]", tt.window, pol, st, tt.want)
		}
	}
	// A decision without a Window (failsafe's, when it decides alone)
	// sends no w.
	pol, _ := ratelimitfield.Fields(ratelimitfield.Limits("api", 0, core.Decision{Allowed: true, Limit: 10}), 0)
	if want := []string{`"api";q=10`}; !slices.Equal(pol, want) {
		t.Errorf("no Window: RateLimit-Policy %q, want %q", pol, want)
	}
	// A decision made without the limiter (failsafe's fail-open answer,
	// Limit 0) names no limit: q=0 r=0 would tell a client it has none.
	if ls := ratelimitfield.Limits("api", time.Minute, core.Decision{Allowed: true}); ls != nil {
		t.Errorf("a decision without a Limit names %+v, want none", ls)
	}
}

// A policy's decision names its enforced limits, each with its own w.
func TestLimitsOfAPolicy(t *testing.T) {
	d := core.Decision{
		Allowed: true, Limit: 10, Remaining: 9, ResetAfter: time.Second, Window: time.Second,
		Limits: []core.LimitDecision{
			{Name: "second", Decision: core.Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: time.Second, Window: time.Second}},
			{Name: "trial", Shadow: true, Decision: core.Decision{Limit: 1, RetryAfter: time.Hour, ResetAfter: time.Hour, Window: time.Hour}},
			{Name: "day", Decision: core.Decision{Allowed: true, Limit: 1000, Remaining: 999, ResetAfter: time.Hour, Window: 24 * time.Hour}},
		},
	}
	names := func(ls []ratelimitfield.Limit) (out []string) {
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}
	// The name and window given are a single limiter's: a policy's limits
	// have their own.
	ls := ratelimitfield.Limits("api", time.Minute, d)
	if got := names(ls); !slices.Equal(got, []string{"second", "day"}) {
		t.Errorf("Limits names %v, want the enforced limits [second day]: a shadow limit is never sent", got)
	}
	pol, st := ratelimitfield.Fields(ls, 0)
	if want := []string{`"second";q=10;w=1`, `"day";q=1000;w=86400`}; !slices.Equal(pol, want) {
		t.Errorf("RateLimit-Policy %q, want %q", pol, want)
	}
	if want := []string{`"second";r=9;t=1`, `"day";r=999;t=3600`}; !slices.Equal(st, want) {
		t.Errorf("RateLimit %q, want %q", st, want)
	}
	// Blocked by a penalty: nothing remains until the block ends.
	d.Allowed, d.Blocked, d.RetryAfter, d.Remaining = false, true, 40*time.Second, 0
	pol, st = ratelimitfield.Fields(ratelimitfield.Limits("api", 0, d), ratelimitfield.RetryAfter(d.RetryAfter))
	if want := []string{`"second";q=10;w=1`, `"day";q=1000;w=86400`}; !slices.Equal(pol, want) {
		t.Errorf("blocked: RateLimit-Policy %q, want %q", pol, want)
	}
	if want := []string{`"second";r=0;t=40`, `"day";r=0;t=40`}; !slices.Equal(st, want) {
		t.Errorf("blocked: RateLimit %q, want %q", st, want)
	}
}
