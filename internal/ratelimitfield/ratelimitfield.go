// Package ratelimitfield writes the rate-limit fields of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-10),
// which httplimit sends as HTTP headers and grpclimit as gRPC metadata:
//
//	RateLimit-Policy: "api";q=100;w=60
//	RateLimit: "api";r=42;t=17
//	Retry-After: 3
//
// # What t says
//
// The draft defines t as: "The "t" parameter indicates the number of
// seconds until additional quota associated with the quota policy is made
// available", adds that "The client MUST NOT assume that all its service
// limit will be fully restored at the moment indicated by the reset
// parameter", and binds it to Retry-After: "If a response contains both
// the Retry-After and the RateLimit header fields, the Retry-After field
// value SHOULD NOT reference a point in time earlier than the reset
// parameter". A core.Decision tells when the request would pass
// (RetryAfter, on a denial) and when the limiter is full again
// (ResetAfter), not when its next unit comes back, so [Reset] writes:
//
//   - for a limit that denied, its RetryAfter (rounded up, never 0): the
//     quota the request needs is back then, and on a response denied by
//     that limit alone t equals Retry-After;
//   - for a limit that allowed, its ResetAfter (rounded up): by then
//     additional quota has been made available, unless the limit is full
//     (ResetAfter 0, so t=0); a client that spends no more than r before t
//     is never denied by this limit;
//   - on a denied response, no t later than its Retry-After.
//
// # Integers
//
// Every Integer in the fields is between 0 and [MaxInteger], the largest
// a Structured Field may hold (RFC 8941, section 3.3.1: at most 15
// digits): a larger one would make the whole field malformed, and the
// draft says "Malformed RateLimit header fields MUST be ignored". A limit
// or remaining count above it is sent as MaxInteger (a client cannot
// spend that many requests anyway); no duration reaches it, since a
// time.Duration is at most about 9.2e9 seconds.
package ratelimitfield

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
)

// The field names, as HTTP writes them; gRPC metadata keys are their
// lower case.
const (
	PolicyName     = "RateLimit-Policy"
	StateName      = "RateLimit"
	RetryAfterName = "Retry-After"
)

// MaxInteger is the largest Integer of a Structured Field (RFC 8941): 15
// nines. No field this package writes holds a larger one.
const MaxInteger = 999_999_999_999_999

// Policy is one RateLimit-Policy list item: "name";q=limit, with ;w=window
// in whole seconds (rounded up) when window is positive. limit is at most
// MaxInteger in the item.
func Policy(name string, limit int64, window time.Duration) string {
	s := quote(name) + ";q=" + Integer(limit)
	if window > 0 {
		s += ";w=" + Integer(CeilSeconds(window))
	}
	return s
}

// State is one RateLimit list item: "name";r=remaining;t=reset, with
// remaining and reset (in seconds, see [Reset]) between 0 and MaxInteger.
func State(name string, remaining, reset int64) string {
	return quote(name) + ";r=" + Integer(remaining) + ";t=" + Integer(reset)
}

// Integer formats v as a Structured Field Integer of the fields: v, but
// never below 0 nor above MaxInteger.
func Integer(v int64) string { return strconv.FormatInt(min(max(v, 0), MaxInteger), 10) }

// Limit is one limit a response's fields name.
type Limit struct {
	// Name names the limit's items.
	Name string
	// Window, when positive, is advertised as w.
	Window time.Duration
	// Decision is the limit's decision on the request: q is its Limit, r
	// its Remaining, t is [Reset]'s.
	core.Decision
}

// Reset is l's t, in whole seconds, in a response whose Retry-After is
// retryAfter seconds (RetryAfter's), or 0 when the response has none: see
// the package doc, "What t says".
func (l Limit) Reset(retryAfter int64) int64 {
	t := CeilSeconds(l.ResetAfter)
	if !l.Allowed {
		t = RetryAfter(l.RetryAfter)
	}
	if retryAfter > 0 {
		t = min(t, retryAfter)
	}
	return t
}

// Fields returns the RateLimit-Policy and RateLimit list items of limits,
// in order, for a response whose Retry-After is retryAfter seconds (0 when
// it has none).
func Fields(limits []Limit, retryAfter int64) (policies, states []string) {
	if len(limits) == 0 {
		return nil, nil
	}
	policies = make([]string, len(limits))
	states = make([]string, len(limits))
	for i, l := range limits {
		policies[i] = Policy(l.Name, l.Limit, l.Window)
		states[i] = State(l.Name, l.Remaining, l.Reset(retryAfter))
	}
	return policies, states
}

// Limits returns the limits of a decision that the fields name. A
// policy's decision (d.Limits) names its enforced limits, in order, each
// with its own Window. Shadow limits are left out: they never deny, and a
// client that throttled itself on them would undo the point of a shadow
// rollout, which is to watch a limit before it binds. While the key is
// blocked by a penalty every limit is named with r=0 and, as t, the
// block's end (d.RetryAfter): no quota is available before it, whatever
// the limits would say. Any other decision is one limit named name, with
// window as its w when window is positive and d.Window otherwise; one
// whose Limit is 0 (failsafe's, while its store is down) names none.
func Limits(name string, window time.Duration, d core.Decision) []Limit {
	if d.Limits == nil && d.Limit == 0 {
		// A decision made without the limiter (failsafe's while its store
		// is down) says nothing of a quota: no item rather than q=0.
		return nil
	}
	if d.Limits == nil {
		if window <= 0 {
			window = d.Window
		}
		return []Limit{{Name: name, Window: window, Decision: d}}
	}
	var out []Limit
	for _, l := range d.Limits {
		if l.Shadow {
			continue
		}
		dec := l.Decision
		if d.Blocked {
			dec.Allowed, dec.Remaining, dec.RetryAfter = false, 0, d.RetryAfter
		}
		out = append(out, Limit{Name: l.Name, Window: dec.Window, Decision: dec})
	}
	return out
}

// RetryAfter is Retry-After's value for a denial: whole seconds, rounded
// up and never 0, so that a client that waits it is not denied again for
// waiting too little.
func RetryAfter(d time.Duration) int64 { return max(CeilSeconds(d), 1) }

// CeilSeconds is d in whole seconds, rounded up; 0 for d <= 0. It does not
// overflow: CeilSeconds(math.MaxInt64) is 9223372037.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// DefaultName names a policy its configuration leaves unnamed.
const DefaultName = "default"

// CheckName returns why name cannot name a policy in the fields, or nil:
// a Structured Field string holds printable ASCII only (RFC 8941), and a
// name is at most 64 bytes.
func CheckName(name string) error {
	if len(name) > 64 {
		return errors.New("longer than 64 bytes")
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("byte %#x is not printable ASCII", name[i])
		}
	}
	return nil
}

// quote quotes s as a Structured Field string (RFC 8941).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
