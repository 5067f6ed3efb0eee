package core

import "time"

// Clock tells the time. A limiter given a Clock decides at the Clock's time
// and passes it to the store; a limiter without one uses the store's own
// clock (TIME on the Redis server), so that many application servers agree.
// The memory store, failsafe, denycache and hotkey take one too.
//
// Constructors read a Clock once and refuse, with an error wrapping
// [ErrInvalidConfig], one that reads a time outside 1970 to 2112 (what
// ratekit computes with): a nil *fakeclock.Clock or a nil ClockFunc reads
// the zero time, and is refused so, not met with a panic at the first call.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function such as time.Now to a [Clock]. A nil ClockFunc
// reads the zero time, which limiters refuse when they are built.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time {
	if f == nil {
		return time.Time{}
	}
	return f()
}
