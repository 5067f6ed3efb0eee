package core

import "time"

// Clock tells the time. A limiter given a Clock decides at the Clock's time
// and passes it to the store; a limiter without one uses the store's own
// clock (TIME on the Redis server), so that many application servers agree.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function such as time.Now to a [Clock].
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }
