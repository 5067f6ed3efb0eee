package core

import "time"

// Decision is a limiter's answer for one request.
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
}
