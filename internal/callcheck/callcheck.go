// Package callcheck holds what a ratekit limiter checks of a call before
// it asks its store (the key, the cost, the caller's context), for the
// wrappers that answer some calls without asking the limiter they wrap:
// failsafe while its store is down, denycache from its cache. They refuse
// what the limiter would refuse, with the same errors.
package callcheck

import (
	"context"
	"fmt"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// Request returns the error a ratekit limiter returns for r without
// asking its store, checking what it checks in its order: r's Op
// (wrapping core.ErrInvalidConfig), its key (core.ErrInvalidKey), its
// Params (each built by an algorithm package's NewParams,
// core.ErrInvalidConfig), its cost (1 to the limit, core.ErrInvalidCost)
// and ctx (ended: core.ErrStore and ctx's error); nil when there is none. The cost is checked
// against the least Limit of r.Params when every entry is given, and
// against that and maxCost (the wrapped limiter's MaxCost) when one is
// nil or there are none: the wrapped limiter alone knows its own limits
// one by one, and whether the Params are for its algorithms.
func Request(ctx context.Context, r core.Request, maxCost int64) error {
	if _, err := engine.ModeOf(r.Op); err != nil {
		return err
	}
	if err := keyspace.CheckKey(r.Key); err != nil {
		return err
	}
	for i, k := range r.Keys {
		if len(k) > core.MaxKeyLen {
			return fmt.Errorf("%w: Keys[%d] is %d bytes, more than %d", core.ErrInvalidKey, i, len(k), core.MaxKeyLen)
		}
	}
	if len(r.Params) > 0 {
		given, all := params.MaxCount, true
		for _, gp := range r.Params {
			if gp == nil {
				all = false
				continue
			}
			p, err := engine.AsParams(gp)
			if err != nil {
				return err
			}
			given = min(given, p.Limit())
		}
		if all {
			maxCost = given
		} else {
			maxCost = min(maxCost, given)
		}
	}
	if err := params.Cost(r.N, maxCost); err != nil {
		return err
	}
	return engine.Ended(ctx)
}
