package ratekit

import "github.com/ratekit/ratekit/core"

// Algorithm returns the name of the limiter's algorithm, as
// algorithms.All lists it and its package is named ("tokenbucket",
// "gcra", ...), or "policy" for a policy; "" for a Limiter that cannot
// decide. It is fixed by the algorithm, never by a key, so metrics and
// traces use it as an attribute.
func (l *Limiter) Algorithm() string { return l.engine().Name() }

// Store returns the store the limiter runs its scripts on, as given to
// the algorithm's New; nil for a Limiter that cannot decide. Stores name
// themselves with core.StoreNamer.
func (l *Limiter) Store() core.ScriptRunner { return l.engine().Store() }

// MaxCost is the largest cost AllowN, Refund and AllowMany accept: the
// limit (Decision.Limit), or a policy's smallest, since a larger cost
// could never pass; 0 for a Limiter that cannot decide. Wrappers that
// answer without the store (failsafe, denycache) refuse larger costs with
// it, as the limiter does.
func (l *Limiter) MaxCost() int64 { return l.engine().MaxCost() }
