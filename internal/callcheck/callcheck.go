// Package callcheck holds what a ratekit limiter checks of a call before
// it asks its store (the key, the cost, the caller's context), for the
// wrappers that answer some calls without asking the limiter they wrap:
// failsafe while its store is down, denycache from its cache. They refuse
// what the limiter would refuse, with the same errors.
package callcheck

import (
	"context"
	"fmt"
	"math"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/internal/typednil"
)

// maxCoster says the largest cost it accepts: ratekit.Limiter and
// ratekit.Policy.
type maxCoster interface{ MaxCost() int64 }

// unwrapper is a limiter that wraps another (failsafe, denycache,
// hotkey, otelratekit).
type unwrapper interface{ Unwrap() core.Limiter }

// maxDepth bounds the walk through wrapped limiters, against a chain
// that loops.
const maxDepth = 64

// MaxCost returns the largest cost l accepts: what MaxCost returns on l
// or, through Unwrap, on the first limiter behind it that has the method;
// math.MaxInt64 when none has.
func MaxCost(l any) int64 {
	for range maxDepth {
		if typednil.Is(l) {
			break
		}
		if m, ok := l.(maxCoster); ok {
			return m.MaxCost()
		}
		u, ok := l.(unwrapper)
		if !ok {
			break
		}
		l = u.Unwrap()
	}
	return math.MaxInt64
}

// storer says which store it runs on: ratekit.Limiter and
// concurrency.Limiter, none for a zero one.
type storer interface{ Store() core.ScriptRunner }

// Unbuilt reports whether l is a ratekit limiter declared but never built
// by its New (a zero Limiter, concurrency.Limiter or Policy), or a
// wrapper of one: every call on it fails with an error wrapping
// core.ErrInvalidConfig, so constructors that take a limiter refuse it
// when it is given.
func Unbuilt(l any) bool {
	_, ok := unbuiltAt(l)
	return ok
}

// unbuiltAt reports whether l, or a limiter it wraps (through Unwrap),
// can never be called: nil, or a ratekit limiter never built by its New;
// depth is how many wrappers lie above that one (0: l itself).
func unbuiltAt(l any) (depth int, ok bool) {
	for depth = range maxDepth {
		if typednil.Is(l) {
			return depth, depth > 0 // l itself: the caller's nil check
		}
		if s, ok := l.(storer); ok {
			return depth, s.Store() == nil
		}
		if m, ok := l.(maxCoster); ok {
			return depth, m.MaxCost() == 0
		}
		u, ok := l.(unwrapper)
		if !ok {
			return depth, false
		}
		l = u.Unwrap()
	}
	return depth, false
}

// Unusable says why a constructor given l as a limiter must refuse it
// ("nil", "a nil *T", "a zero *T, not built by its New"), or returns ""
// when l can be called.
func Unusable(l any) string {
	if typednil.Is(l) {
		return typednil.Name(l)
	}
	switch depth, ok := unbuiltAt(l); {
	case !ok:
		return ""
	case depth == 0:
		return fmt.Sprintf("a zero %T, not built by its New", l)
	default:
		return fmt.Sprintf("a %T around a limiter that is nil or was never built by its New", l)
	}
}

// Check returns the error a ratekit limiter returns, without asking its
// store, for a call on key of cost n with ctx: a bad key (wrapping
// core.ErrInvalidKey), a cost outside [1, maxCost] (core.ErrInvalidCost),
// or ctx ended (core.ErrStore and ctx's error); nil when there is none.
func Check(ctx context.Context, key string, n, maxCost int64) error {
	if err := keyspace.CheckKey(key); err != nil {
		return err
	}
	if err := params.Cost(n, maxCost); err != nil {
		return err
	}
	return engine.Ended(ctx)
}
