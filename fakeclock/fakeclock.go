// Package fakeclock is a core.Clock that moves only when told: for tests of
// code that uses ratekit, and for the conformance suite. Give the same
// Clock to a limiter's Config.Clock and to the memory store
// (memory.WithClock), and time, TTLs included, is the test's to move.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a core.Clock that only moves when told. Safe for concurrent use.
// Its zero value reads the zero time until Set; a nil *Clock reads the
// zero time, which every ratekit constructor
// refuses (core.ErrInvalidConfig), and Set and Advance do nothing on it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Advance moves the clock by d (back when d is negative) and returns the
// new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	if c == nil {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
