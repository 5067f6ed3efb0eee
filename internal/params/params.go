// Package params holds the validation and integer-time arithmetic that every
// ratekit algorithm shares: durations as whole microseconds, times from an
// injected clock, costs, and the decoding of the common four-integer reply.
//
// All arithmetic stays below 2^53 so that a Lua double and a Go int64 agree
// bit for bit.
package params

import (
	"fmt"
	"slices"
	"time"

	"github.com/ratekit/ratekit/core"
)

const (
	// MaxTime is the latest time, in Unix microseconds, a limiter computes
	// with (2^52 µs, in the year 2112).
	MaxTime = int64(1) << 52
	// MaxSpan is the longest duration, in microseconds, an algorithm may
	// need to represent (time to full refill, window): 2^51 µs, about 71 years.
	// MaxTime + 2*MaxSpan stays at 2^53.
	MaxSpan = int64(1) << 51
	// MaxCount bounds counts, capacities and rates (2^50), so that sums and
	// products used by the scripts stay below 2^53.
	MaxCount = int64(1) << 50
	// MaxState bounds every integer a script stores (2^52 + 2^51, which
	// the Lua prelude holds as MAX_STATE): the latest time a state may name
	// is MaxTime + MaxSpan, and counts and scaled levels stay below 2^51. A
	// stored value outside [0, MaxState] was not written by ratekit, and the
	// script answers CorruptReply instead of computing with it.
	MaxState = MaxTime + MaxSpan
	// ServerTime is the "now" argument that tells a script to read the
	// store's clock (TIME in Lua).
	ServerTime = int64(-1)
)

// Micros returns d in whole microseconds. d must be positive, a whole number
// of microseconds and at most MaxSpan; otherwise the error wraps
// core.ErrInvalidConfig and names field.
func Micros(field string, d time.Duration) (int64, error) {
	switch {
	case d <= 0:
		return 0, fmt.Errorf("%w: %s must be positive, got %v", core.ErrInvalidConfig, field, d)
	case d%time.Microsecond != 0:
		return 0, fmt.Errorf("%w: %s must be a whole number of microseconds, got %v", core.ErrInvalidConfig, field, d)
	case d/time.Microsecond > time.Duration(MaxSpan):
		return 0, fmt.Errorf("%w: %s must be at most %v, got %v", core.ErrInvalidConfig, field, time.Duration(MaxSpan)*time.Microsecond, d)
	}
	return int64(d / time.Microsecond), nil
}

// Count checks a configured count (capacity, limit, rate): positive and at
// most MaxCount; otherwise the error wraps core.ErrInvalidConfig and names
// field.
func Count(field string, v int64) error {
	if v <= 0 {
		return fmt.Errorf("%w: %s must be positive, got %d", core.ErrInvalidConfig, field, v)
	}
	if v > MaxCount {
		return fmt.Errorf("%w: %s must be at most %d, got %d", core.ErrInvalidConfig, field, MaxCount, v)
	}
	return nil
}

// Cost checks a request's cost: 1 <= n <= limit.
func Cost(n, limit int64) error {
	if n <= 0 || n > limit {
		return costError(n, limit) // out of line: Cost inlines
	}
	return nil
}

//go:noinline
func costError(n, limit int64) error {
	if n <= 0 {
		return fmt.Errorf("%w: n must be positive, got %d", core.ErrInvalidCost, n)
	}
	return fmt.Errorf("%w: n = %d can never be allowed, the limit is %d", core.ErrInvalidCost, n, limit)
}

// Now returns the time to pass to a script: ServerTime when clock is nil,
// otherwise clock's time in Unix microseconds, which must lie in
// [0, MaxTime).
func Now(clock core.Clock) (int64, error) {
	if clock == nil {
		return ServerTime, nil
	}
	return clockNow(clock) // out of line: Now inlines
}

func clockNow(clock core.Clock) (int64, error) {
	return Time("clock", clock.Now())
}

// Time returns t in Unix microseconds, which must lie in [0, MaxTime):
// otherwise the error wraps core.ErrInvalidTime and says that source
// returned t.
func Time(source string, t time.Time) (int64, error) {
	us := t.UnixMicro()
	if us < 0 || us >= MaxTime {
		return 0, fmt.Errorf("%w: %s returned %v, outside 1970-01-01 to %v", core.ErrInvalidTime, source, t, time.UnixMicro(MaxTime).UTC())
	}
	return us, nil
}

// CheckClock reads clock once, if there is one, and refuses with an error
// wrapping core.ErrInvalidConfig (and core.ErrInvalidTime) a time ratekit
// cannot compute with: a nil *fakeclock.Clock or a nil core.ClockFunc
// reads the zero time. Every constructor that takes a Clock calls it.
func CheckClock(clock core.Clock) error {
	if clock == nil {
		return nil
	}
	if _, err := Time("the Clock", clock.Now()); err != nil {
		return fmt.Errorf("%w: %w (a nil *fakeclock.Clock reads the zero time)", core.ErrInvalidConfig, err)
	}
	return nil
}

// CeilDiv returns ceil(a / b) for a >= 0, b > 0.
func CeilDiv(a, b int64) int64 {
	return (a + b - 1) / b
}

// ClockSlackMillis is added to every TTL a script sets when the limiter
// has its own Clock: the TTL then runs on the store's clock while decisions
// use the limiter's, and a limiter clock up to this far behind the store's
// still never sees its state expire early. The Lua scripts hold the same
// constant (60000).
const ClockSlackMillis = 60000

// TTL converts a time to live in microseconds to the whole milliseconds a
// script passes to PEXPIRE / SET PX (rounded up, at least 1), as a duration;
// clientClock adds ClockSlackMillis.
func TTL(us int64, clientClock bool) time.Duration {
	ms := CeilDiv(us, 1000)
	if ms < 1 {
		ms = 1
	}
	if clientClock {
		ms += ClockSlackMillis
	}
	return time.Duration(ms) * time.Millisecond
}

// Corrupt is the first integer of the reply a script gives when the state
// at its key is not one it wrote (CorruptReply).
const Corrupt = -1

// CorruptReply is the whole reply of a script that refuses the state at its
// key: {-1, 0, 0, 0}.
var CorruptReply = [4]int64{Corrupt, 0, 0, 0}

// State reports whether vals is a state of n integers a script could have
// written: exactly n values, each in [0, MaxState].
func State(vals []int64, n int) bool {
	if len(vals) != n {
		return false
	}
	for _, v := range vals {
		if v < 0 || v > MaxState {
			return false
		}
	}
	return true
}

// Decision decodes the reply every ratekit algorithm script returns:
// {allowed (0 or 1), remaining, retry_after_us, reset_after_us}, or
// CorruptReply, which it returns as an error wrapping core.ErrCorruptState.
func Decision(reply []int64, limit int64) (core.Decision, error) {
	if len(reply) == 4 {
		if d, ok := Decoded([4]int64(reply), limit); ok {
			return d, nil
		}
	}
	return core.Decision{}, badReply(reply)
}

// Decoded is Decision for a reply of four integers, reporting ok = false
// where Decision returns an error. It inlines: the in-process path decodes
// its step's reply with it and calls Decision only for the error.
func Decoded(r [4]int64, limit int64) (d core.Decision, ok bool) {
	// allowed is 0 or 1, retry and reset are not negative.
	if uint64(r[0]) > 1 || r[2]|r[3] < 0 {
		return d, false
	}
	return core.Decision{
		Allowed:    r[0] == 1,
		Limit:      limit,
		Remaining:  r[1],
		RetryAfter: time.Duration(r[2]) * time.Microsecond,
		ResetAfter: time.Duration(r[3]) * time.Microsecond,
	}, true
}

// badReply is Decision's error for a reply that is not a decision:
// core.ErrCorruptState for CorruptReply, else an unexpected reply.
//
//go:noinline
func badReply(reply []int64) error {
	if len(reply) == 4 && reply[0] == Corrupt && reply[1] == 0 && reply[2] == 0 && reply[3] == 0 {
		return core.ErrCorruptState
	}
	return fmt.Errorf("%w: %w: want {allowed, remaining, retry_us, reset_us}, got %v", core.ErrStore, core.ErrUnexpectedReply, slices.Clone(reply))
}
