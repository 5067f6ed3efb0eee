// Package fipscheck is what the programs beside it check under
// GODEBUG=fips140=only (TestFIPSOnly runs them): real decisions, through
// every script a limiter sends.
package fipscheck

import (
	"context"
	"crypto/fips140"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
)

// Enforced returns an error unless the program runs with FIPS 140-3
// enforcement on, so that a run without it cannot pass.
func Enforced() error {
	if !fips140.Enforced() {
		return errors.New("FIPS 140-3 enforcement is off: run with GODEBUG=fips140=only")
	}
	return nil
}

// Run makes decisions on runner, under keys that start with prefix: the
// first request of every algorithm, with its Peek and Reset; then a token
// bucket of 2 tokens refilled hourly, whose third request is denied,
// through Allow, Peek, AllowMany and Reset.
func Run(runner core.ScriptRunner, prefix string) error {
	ctx := context.Background()
	for _, a := range algorithms.All {
		lim, err := a.New(runner, a.Defaults(), nil, prefix+a.Name+":")
		if err != nil {
			return err
		}
		if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
			return fmt.Errorf("%s: first Allow = %+v, %v, want allowed", a.Name, d, err)
		}
		if _, err := lim.Peek(ctx, "k"); err != nil {
			return fmt.Errorf("%s: Peek: %w", a.Name, err)
		}
		if err := lim.Reset(ctx, "k"); err != nil {
			return fmt.Errorf("%s: Reset: %w", a.Name, err)
		}
	}
	lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix + "tb:"})
	if err != nil {
		return err
	}
	for i, want := range []bool{true, true, false} {
		if d, err := lim.Allow(ctx, "k"); err != nil || d.Allowed != want {
			return fmt.Errorf("tokenbucket: Allow #%d = %+v, %v, want allowed %v", i+1, d, err, want)
		}
	}
	if d, err := lim.Peek(ctx, "k"); err != nil || d.Allowed || d.Remaining != 0 {
		return fmt.Errorf("tokenbucket: Peek = %+v, %v, want denied with 0 remaining", d, err)
	}
	res := lim.AllowMany(ctx, []core.Request{{Key: "a", N: 2}, {Key: "k", N: 1}, {Key: "a", N: 1}})
	for i, want := range []bool{true, false, false} {
		if r := res[i]; r.Err != nil || r.Decision.Allowed != want {
			return fmt.Errorf("tokenbucket: AllowMany[%d] = %+v, %v, want allowed %v", i, r.Decision, r.Err, want)
		}
	}
	if err := lim.Reset(ctx, "k"); err != nil {
		return fmt.Errorf("tokenbucket: Reset: %w", err)
	}
	if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 1 {
		return fmt.Errorf("tokenbucket: Allow after Reset = %+v, %v, want allowed with 1 remaining", d, err)
	}
	return nil
}
