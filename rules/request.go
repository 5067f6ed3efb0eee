package rules

import (
	"time"

	"github.com/ratekit/ratekit/core"
)

// Entry is one entry of a descriptor: a key and its value.
type Entry struct {
	Key, Value string
}

// Descriptor is one descriptor of a request, as envoy's
// RateLimitDescriptor: its entries, in order, and what the request may
// say of it.
type Descriptor struct {
	Entries []Entry
	// Limit, when not nil, is the request's own limit for the descriptor
	// (envoy's RateLimitOverride): it applies whenever the domain is in
	// the configuration, whatever rule the entries match, never in
	// shadow, counted at the domain and each entry's key and value: each
	// value on its own, even where a share_threshold rule counts the
	// values it matches together, as envoy does.
	Limit *Override
	// Hits, when not nil, is the descriptor's cost instead of the
	// request's (envoy's descriptor hits_addend).
	Hits *int64
}

// Override is a limit a request gives for a descriptor.
type Override struct {
	RequestsPerUnit uint32
	Unit            Unit
}

// Code is a descriptor's answer, and the request's: its numbers are
// those of envoy's RateLimitResponse.Code.
type Code int32

// The codes.
const (
	CodeUnknown Code = 0
	OK          Code = 1
	OverLimit   Code = 2
)

// String returns "OK", "OVER_LIMIT" or "UNKNOWN".
func (c Code) String() string {
	switch c {
	case OK:
		return "OK"
	case OverLimit:
		return "OVER_LIMIT"
	}
	return "UNKNOWN"
}

// Result is the answer to a request: the overall verdict and each
// descriptor's.
type Result struct {
	// Allowed is envoy's overall code OK: false (OVER_LIMIT) when a
	// descriptor that is not in quota mode is over its limit, or when
	// every quota-mode descriptor is, unless Options.ShadowMode is set.
	Allowed bool
	// Statuses holds one Status per descriptor, in the request's order.
	Statuses []Status
}

// Status is one descriptor's answer, with what envoy's DescriptorStatus
// holds and ratekit's own decision.
type Status struct {
	// Code is OK or OverLimit. A shadow_mode rule's denial is OK, with
	// Shadow set.
	Code Code
	// Rule is the rule the descriptor matched, nil when none did, when the
	// domain is not in the configuration, or when the request gave its own
	// Limit (Override is then set).
	Rule *Rule
	// Checked says that a limit was checked: envoy's current_limit is
	// RequestsPerUnit per Unit, named Name. False when no rule applies,
	// and for an unlimited or replaced rule. For a rule of several
	// limits (also) they are the limit that binds, Rule.Limits[Limit]:
	// the one that denied (the longest wait, when several did), or the
	// one with the least left; Name is that limit's name, or the rule's
	// when it has none.
	Checked         bool
	RequestsPerUnit uint32
	Unit            Unit
	Name            string
	Limit           int
	// Remaining is envoy's limit_remaining: what the limit has left
	// after this request, whether allowed or not (a denied request
	// counts nothing); MaxUint32 for an unlimited rule, 0 when no limit
	// is checked.
	Remaining uint32
	// ResetAfter is envoy's duration_until_reset: the time until the
	// limit is whole again (for a window, until it ends). A cost above
	// the limit counts nothing, so Remaining and ResetAfter say what the
	// limit holds: on a fresh key, the whole limit and 0 (envoy, which
	// counts it, says 0 and the rest of the window).
	ResetAfter time.Duration
	// StatsKey names the descriptor's statistics as envoyproxy/ratelimit
	// does (Config.StatsKey; for the request's own Limit, its domain and
	// entries: "domain.key1_value1.key2"); "" when no rule matched.
	StatsKey string
	// Hits is the cost the descriptor was decided with: its own Hits, or
	// the request's.
	Hits int64
	// Decision is ratekit's decision, the zero Decision when the store was
	// not asked (no limit checked, requests_per_unit 0).
	Decision core.Decision
	// Why a limit was or was not checked.
	DomainNotFound bool // the domain is not in the configuration
	Unlimited      bool // the rule is unlimited
	Replaced       bool // the rule is replaced by another matched rule
	Override       bool // the request's own Limit was checked
	Shadow         bool // a shadow_mode rule was over its limit: Code is OK
}

// bind reports limit j of the status's rule as the one that binds.
func (s *Status) bind(j int) {
	l := &s.Rule.Limits[j]
	s.Limit, s.RequestsPerUnit, s.Unit = j, l.RequestsPerUnit, l.Unit
	if l.Name != "" {
		s.Name = l.Name
	}
}
