package ratekit

import (
	"fmt"

	"github.com/ratekit/ratekit/internal/engine"
)

// Carry says what a key's state carries over when the limit it is
// decided against changes: a limit given with a request
// (core.Request.Params) other than the one that last wrote the key, a
// tier changed (Tiers), a rules file reloaded, or processes with old and
// new limits side by side during a rolling deploy. It is a field of the
// Config of the algorithms whose state is a level that a limit bounds
// (tokenbucket, leakybucket, gcra); the windows (fixedwindow,
// slidingcounter, slidinglog) count what happened, and keep their counts.
//
// Both rules keep two promises, on every store: a raised limit never
// denies a request the old one would have allowed, and a lowered one
// never allows one the old one would have denied, nor more than the new
// limit admits (the key never holds more than the new limit). Each
// algorithm's package doc says how ("Time and configuration changes").
// The zero Carry is CarryUsed.
type Carry int64

const (
	// CarryUsed keeps what the key has used: a raised limit gives the
	// difference at once (a customer's raised quota helps now), a lowered
	// one leaves only what is left of it (nothing, when the key has used
	// more than the new limit). It is the default.
	CarryUsed Carry = engine.CarryUsed
	// CarryAvailable keeps what the key has left, at most the new limit:
	// a raised limit gives more only as the key refills, a lowered one
	// cuts what is left to the new limit.
	CarryAvailable Carry = engine.CarryAvailable
)

// carries are the Carry values, in order.
var carries = [...]string{CarryUsed: "used", CarryAvailable: "available"}

// String names the rule: "used" or "available".
func (c Carry) String() string {
	if c >= 0 && int(c) < len(carries) {
		return carries[c]
	}
	return fmt.Sprintf("Carry(%d)", int64(c))
}

// Carries returns the names of the Carry values, in the order of their
// values: for a UI or a configuration file.
func Carries() []string { return carries[:] }
