package ratekit

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// Limit is one limit of a policy (NewPolicy): a limiter, the name it is
// reported under, and how it enforces.
type Limit struct {
	// Name names the limit in decisions (core.Decision.Limits) and in
	// HTTP headers: 1 to 64 bytes, a lowercase letter or '*' first, then
	// lowercase letters, digits, '_', '-', '.' or '*' (a structured-field
	// key, RFC 8941). Names are unique within a policy.
	Name string
	// Limiter is the limit's algorithm, configuration, store and key
	// prefix: what an algorithm's New returned (not a policy). Every
	// limit of a policy has a prefix of its own, and all share one store.
	// A policy decides all its limits at one time: the store's, when no
	// limit has a Clock, or the first limit's Clock, when every limit has
	// one (a calendar window, fixedwindow.NewCalendar, always has one: in
	// a policy with it, give the other limits a Clock, such as
	// core.ClockFunc(time.Now)). Limits with and without a Clock cannot
	// share a policy.
	Limiter *Limiter
	// Shadow makes the limit report without enforcing: it decides and
	// counts like the others, but its denial never denies a request; its
	// LimitDecision says Shadow.
	Shadow bool
	// Penalty, when positive, blocks the key for this long when this limit
	// denies a request (AllowN): until the block ends every request on the
	// key is denied, and RetryAfter says when it ends. A whole number of
	// microseconds. A shadow limit's penalty never applies.
	Penalty time.Duration
}

// PolicyConfig configures a policy (NewPolicy).
type PolicyConfig struct {
	// Limits are the policy's limits, 1 to MaxPolicyLimits of them,
	// reported in this order.
	Limits []Limit
	// Shadow runs the whole policy in shadow: every limit as if its
	// Shadow were set. A shadow policy never denies a request.
	Shadow bool
	// PenaltyPrefix is the key prefix of the penalty blocks,
	// DefaultPenaltyPrefix when empty. It must differ from every limit's
	// prefix and must not contain '{' or '}'.
	PenaltyPrefix string
	// OnShadowDeny, when set, is called after every request that a shadow
	// limit would have denied (and no enforced one did), with the
	// decision. It runs on the caller's goroutine: keep it short.
	OnShadowDeny func(ctx context.Context, key string, d core.Decision)
	// Keyed makes a policy of limits of different keys: it decides only
	// requests that give Keys (core.Request.Keys), and its limits may
	// share a prefix, so that a counter keeps one storage key whichever
	// place it takes in a policy (package rules decides the descriptors
	// of a request so, with one limiter per algorithm). In a request, two
	// limits of one prefix must then have different Keys. A keyed policy
	// has no penalties (they would block the Key the limits share).
	Keyed bool
}

// DefaultPenaltyPrefix is the key prefix of penalty blocks when
// PolicyConfig.PenaltyPrefix is empty.
const DefaultPenaltyPrefix = "ratekit:penalty:"

// MaxPolicyLimits is the most limits a policy holds.
const MaxPolicyLimits = 16

// NewPolicy returns a Limiter that decides each request against several
// limits of one key at once, in one script on the store: the request is
// allowed only if every enforced limit allows it, and then every limit
// counts it; when any denies, none counts anything (no "counter
// pollution"). Limits may run in shadow, and may block a key that exceeds
// them for a penalty time. Each decision holds every limit's in Limits
// (core.Decision); its own fields are those of the limit that binds.
//
// All of a key's limits and its penalty block share the key's cluster slot
// (the user's key is the hash tag), so a policy works on Redis Cluster as
// on one node. An error wraps core.ErrInvalidConfig and names the limit.
func NewPolicy(cfg PolicyConfig) (*Limiter, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: ratekit.NewPolicy: %s", core.ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	if len(cfg.Limits) == 0 || len(cfg.Limits) > MaxPolicyLimits {
		return nil, bad("a policy holds 1 to %d limits, got %d", MaxPolicyLimits, len(cfg.Limits))
	}
	ec := engine.Config{Policy: true, OnShadowDeny: cfg.OnShadowDeny, Keyed: cfg.Keyed}
	var first *engine.Engine
	names := map[string]bool{}
	prefixes := map[string]bool{}
	penalized := false
	for i, l := range cfg.Limits {
		if err := checkLimitName(l.Name); err != nil {
			return nil, bad("limit %d: %v", i, err)
		}
		if names[l.Name] {
			return nil, bad("two limits are named %q", l.Name)
		}
		names[l.Name] = true
		e := l.Limiter.engine()
		switch {
		case e == nil:
			return nil, bad("limit %q has no Limiter (nil, or not built by its New)", l.Name)
		case e.Policy():
			return nil, bad("limit %q is a policy; a limit is one algorithm's limiter", l.Name)
		}
		if first == nil {
			first = e
			ec.Store, ec.Clock = e.Store(), e.Clock()
		}
		if e != first && !sameStore(e.Store(), first.Store()) {
			return nil, bad("limit %q has another store than limit %q", l.Name, cfg.Limits[0].Name)
		}
		if (e.Clock() == nil) != (first.Clock() == nil) {
			has, hasNot := l.Name, cfg.Limits[0].Name
			if e.Clock() == nil {
				has, hasNot = hasNot, has
			}
			return nil, bad("limit %q has a Clock and limit %q has none: a policy decides all its limits at one time, so give every limit a Clock (a calendar window always has one) or none", has, hasNot)
		}
		el := e.Limits()[0]
		if l.Penalty != 0 && cfg.Keyed {
			return nil, bad("limit %q has a Penalty: a keyed policy has none (it would block the Key its limits share)", l.Name)
		}
		if prefixes[el.Prefix] && !cfg.Keyed {
			return nil, bad("limit %q shares the prefix %q with another limit", l.Name, el.Prefix)
		}
		prefixes[el.Prefix] = true
		el.Name, el.Shadow = l.Name, l.Shadow || cfg.Shadow
		if l.Penalty != 0 {
			us, err := params.Micros("Penalty of limit "+l.Name, l.Penalty)
			if err != nil {
				return nil, err
			}
			el.Penalty = us
			penalized = true
		}
		ec.Limits = append(ec.Limits, el)
	}
	// The prefix is checked even when no limit has a penalty: a setting
	// that is wrong is refused, whether or not it is used yet.
	ec.PenaltyPrefix = cmp.Or(cfg.PenaltyPrefix, DefaultPenaltyPrefix)
	if err := keyspace.CheckPrefix(ec.PenaltyPrefix); err != nil {
		return nil, err
	}
	if prefixes[ec.PenaltyPrefix] && (cfg.PenaltyPrefix != "" || penalized) {
		return nil, bad("PenaltyPrefix %q is a limit's prefix", ec.PenaltyPrefix)
	}
	e, err := engine.New(ec)
	if err != nil {
		return nil, err
	}
	return &Limiter{e: e}, nil
}

// checkLimitName checks a limit's name (Limit.Name).
func checkLimitName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("a limit's Name must be 1 to 64 bytes, got %q", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		lower := c >= 'a' && c <= 'z'
		if lower || c == '*' || (i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')) {
			continue
		}
		return fmt.Errorf("limit name %q: byte %d (%q) is not allowed (lowercase letters or '*' first, then lowercase letters, digits, '_', '-', '.', '*')", name, i, c)
	}
	return nil
}

// sameStore reports whether a and b are the same store value. Stores are
// pointers; a store of a type that cannot be compared is the same as no
// other.
func sameStore(a, b core.ScriptRunner) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
