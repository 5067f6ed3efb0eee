// Package callcheck holds what a ratekit limiter checks of a call before
// it asks its store (the key, the cost, the caller's context), for the
// wrappers that answer some calls without asking the limiter they wrap:
// failsafe while its store is down, denycache from its cache. They refuse
// what the limiter would refuse, with the same errors.
package callcheck

import (
	"context"

	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

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
