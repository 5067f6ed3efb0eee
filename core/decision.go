package core

import "time"

// Decision is a limiter's answer for one request.
//
// A policy's decision (several limits decided at once, ratekit.NewPolicy)
// also holds each limit's decision in Limits; its own fields then are
// those of the limit that binds: when the request is denied, the enforced
// limit whose RetryAfter is the longest (and the penalty block, if one
// holds: RetryAfter is then the wait until the block ends and Remaining is
// 0); when it is allowed, the enforced limit with the least Remaining (of
// all limits, when every one runs in shadow).
type Decision struct {
	// Allowed reports whether the request may proceed. An allowed request has
	// been counted; a denied one consumed nothing.
	Allowed bool
	// Limit is the configured limit the decision was made against (the
	// bucket capacity, or the number of requests per window).
	Limit int64
	// Remaining is what is left after this decision: for example tokens in
	// the bucket, or requests left in the window.
	Remaining int64
	// RetryAfter is zero when allowed. When denied, it is the wait after
	// which the same request would be allowed, if nothing else is counted
	// in between.
	RetryAfter time.Duration
	// ResetAfter is the wait until the limiter is back to its initial, full
	// state for this key, if nothing else is counted in between.
	ResetAfter time.Duration
	// Window is the time in which the limiter gives back its whole Limit,
	// as configured: a window's length, or the time a token bucket or a
	// GCRA takes to refill from empty. Limit per Window is the rate it
	// enforces, what the IETF RateLimit-Policy field calls q and w. Zero
	// when the limiter has no such time (a decision made without its
	// store, by failsafe).
	Window time.Duration
	// Limits holds, for a policy, each of its limits' decisions, in the
	// policy's order; nil for a limiter of one algorithm. While the key is
	// blocked by a penalty they are what each limit would decide (Peek).
	Limits []LimitDecision
	// Blocked reports that a policy's penalty blocks the key: one in
	// force, or one this request started.
	Blocked bool
}

// LimitDecision is one limit's part of a policy's Decision.
type LimitDecision struct {
	// Name is the limit's name in the policy.
	Name string
	// Shadow reports that the limit runs in shadow: it decides, but its
	// denial never denies a request.
	Shadow bool
	// Decision is the limit's own decision (its Limits is nil). A limit
	// that allowed a request another limit denied counted nothing: its
	// Remaining is what a Peek would report.
	Decision
}

// DeniedBy returns the names of the limits of a policy's decision that
// denied its request, in the policy's order: the enforced limits when
// shadow is false, and those in shadow that would have denied it when
// shadow is true. It returns nil when none did, and for a limiter of one
// algorithm (no Limits).
func (d Decision) DeniedBy(shadow bool) []string {
	var names []string
	for _, l := range d.Limits {
		if l.Shadow == shadow && !l.Allowed {
			names = append(names, l.Name)
		}
	}
	return names
}
