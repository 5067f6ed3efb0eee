package ratekit

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ratekit/ratekit/core"
)

// ErrUnknownTier is returned by Tiers.Policy for a tier it does not hold
// (the caller's tier name, not a limiter's input: it wraps none of core's
// sentinels).
var ErrUnknownTier = errors.New("ratekit: unknown tier")

// Tiers holds one [Policy] per tier: free and paid tenants, an internal
// service, one noisy customer's override. User code picks the tier of each
// request; no limiter is built per key.
//
// The policies have one shape: the same limits (by name, algorithm, key
// prefix and store), in the same order, and the same penalty prefix; only
// their configurations, Shadow and Penalty differ. So a key whose tier
// changes keeps its state, and each algorithm reads it under the new
// configuration as its package doc says ("Time and configuration
// changes"): for example a token bucket keeps its tokens, capped at the
// new Capacity, and a GCRA key never waits longer than the new
// configuration allows plus the time the clock is behind it.
type Tiers struct {
	policies map[string]*Policy
}

// NewTiers checks that policies have one shape and returns their Tiers,
// or an error wrapping core.ErrInvalidConfig that names the first
// difference.
func NewTiers(policies map[string]*Policy) (*Tiers, error) {
	names := make([]string, 0, len(policies))
	for name := range policies {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: ratekit.NewTiers: no tiers", core.ErrInvalidConfig)
	}
	first := policies[names[0]]
	penalized := "" // the first tier with penalties
	for _, name := range names {
		p := policies[name]
		if p == nil {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q has a nil Policy", core.ErrInvalidConfig, name)
		}
		if err := sameShape(first, p); err != nil {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q differs from tier %q: %v", core.ErrInvalidConfig, name, names[0], err)
		}
		// Tiers without penalties match any; those with penalties must all
		// block under one prefix, so that a key keeps its block when it
		// moves between them.
		if p.penalty == "" {
			continue
		}
		if penalized == "" {
			penalized = name
		} else if q := policies[penalized]; q.penalty != p.penalty {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q differs from tier %q: penalty prefix %q against %q", core.ErrInvalidConfig, name, penalized, p.penalty, q.penalty)
		}
	}
	return &Tiers{policies: policies}, nil
}

// Policy returns the tier's policy, or an error wrapping ErrUnknownTier;
// on a Tiers NewTiers did not build, an error wrapping
// core.ErrInvalidConfig.
func (t *Tiers) Policy(tier string) (*Policy, error) {
	if t == nil || t.policies == nil {
		return nil, fmt.Errorf("%w: a zero ratekit.Tiers: build it with NewTiers", core.ErrInvalidConfig)
	}
	p, ok := t.policies[tier]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTier, tier)
	}
	return p, nil
}

// Names returns the tiers' names, sorted.
func (t *Tiers) Names() []string {
	if t == nil {
		return nil
	}
	names := make([]string, 0, len(t.policies))
	for name := range t.policies {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// sameShape reports how b's shape differs from a's, or nil.
func sameShape(a, b *Policy) error {
	if len(a.engines) != len(b.engines) {
		return fmt.Errorf("%d limits against %d", len(b.engines), len(a.engines))
	}
	for i, ea := range a.engines {
		eb := b.engines[i]
		switch {
		case a.names[i] != b.names[i]:
			return fmt.Errorf("limit %d is %q, not %q", i, b.names[i], a.names[i])
		case ea.Spec() != eb.Spec():
			return fmt.Errorf("limit %q is a %s, not a %s", a.names[i], eb.Spec().Name, ea.Spec().Name)
		case ea.Prefix() != eb.Prefix():
			return fmt.Errorf("limit %q has the prefix %q, not %q", a.names[i], eb.Prefix(), ea.Prefix())
		case !same(ea.Runner(), eb.Runner()) || (ea.Clock() == nil) != (eb.Clock() == nil):
			return fmt.Errorf("limit %q has another store, or a Clock where the other has none", a.names[i])
		}
	}
	return nil
}
