package ratekit

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// ErrUnknownTier is returned by Tiers.Policy for a tier it does not hold
// (the caller's tier name, not a limiter's input: it wraps none of core's
// sentinels).
var ErrUnknownTier = errors.New("ratekit: unknown tier")

// Tiers holds one policy (NewPolicy) per tier: free and paid tenants, an internal
// service, one noisy customer's override. User code picks the tier of each
// request; no limiter is built per key. The zero Tiers, and a nil
// *Tiers, hold no tier: Policy returns an error wrapping
// core.ErrInvalidConfig; build one with NewTiers.
//
// The policies have one shape: the same limits (by name, algorithm, key
// prefix and store), in the same order, and the same penalty prefix; only
// their configurations, Shadow and Penalty differ. So a key whose tier
// changes keeps its state, and each algorithm reads it under the new
// configuration as its package doc says ("Time and configuration
// changes"): a raised tier never denies what the old one would have
// allowed, a lowered one never allows what it would have denied; for
// example a token bucket keeps what it used (Carry), so a tier raised by
// k tokens gives k more at once. (The same holds for limits given with
// each request, core.Request.Params, which need no Tiers at all.)
type Tiers struct {
	policies map[string]*Limiter
}

// NewTiers checks that policies, each built by NewPolicy, have one shape
// and returns their Tiers, or an error wrapping core.ErrInvalidConfig that
// names the first difference. The Tiers hold a copy of the map they
// checked: the caller may change or reuse its map afterwards, while
// requests run, and the Tiers do not see it.
func NewTiers(policies map[string]*Limiter) (*Tiers, error) {
	policies = maps.Clone(policies) // what is checked is what is kept
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
		p := policies[name].engine()
		if !p.Policy() {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q is not a policy built by NewPolicy", core.ErrInvalidConfig, name)
		}
		if err := sameShape(first.engine(), p); err != nil {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q differs from tier %q: %v", core.ErrInvalidConfig, name, names[0], err)
		}
		// Tiers without penalties match any; those with penalties must all
		// block under one prefix, so that a key keeps its block when it
		// moves between them.
		if p.PenaltyPrefix() == "" {
			continue
		}
		if penalized == "" {
			penalized = name
		} else if q := policies[penalized].engine(); q.PenaltyPrefix() != p.PenaltyPrefix() {
			return nil, fmt.Errorf("%w: ratekit.NewTiers: tier %q differs from tier %q: penalty prefix %q against %q", core.ErrInvalidConfig, name, penalized, p.PenaltyPrefix(), q.PenaltyPrefix())
		}
	}
	return &Tiers{policies: policies}, nil
}

// Policy returns the tier's policy, or an error wrapping ErrUnknownTier;
// on a Tiers NewTiers did not build, an error wrapping
// core.ErrInvalidConfig.
func (t *Tiers) Policy(tier string) (*Limiter, error) {
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
func sameShape(a, b *engine.Engine) error {
	if a == b {
		return nil // the same policy, whose store may not be comparable
	}
	la, lb := a.Limits(), b.Limits()
	if len(la) != len(lb) {
		return fmt.Errorf("%d limits against %d", len(lb), len(la))
	}
	for i := range la {
		switch x, y := &la[i], &lb[i]; {
		case x.Name != y.Name:
			return fmt.Errorf("limit %d is %q, not %q", i, y.Name, x.Name)
		case x.Spec != y.Spec:
			return fmt.Errorf("limit %q is a %s, not a %s", x.Name, y.Spec.Name, x.Spec.Name)
		case x.Prefix != y.Prefix:
			return fmt.Errorf("limit %q has the prefix %q, not %q", x.Name, y.Prefix, x.Prefix)
		case !sameStore(a.Store(), b.Store()) || (a.Clock() == nil) != (b.Clock() == nil):
			return fmt.Errorf("limit %q has another store, or a Clock where the other has none", x.Name)
		}
	}
	return nil
}
