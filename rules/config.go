package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/core"
)

// Config is a parsed configuration: domains of descriptors and their
// rules, with every rule's limits built (Parse, Load). It never changes
// once made and is safe for concurrent use; Rules decides with one
// (Rules.Set puts another in force).
type Config struct {
	domains map[string]*node
	rules   []*Rule
}

// Rule is one descriptor of the configuration with a rate_limit: what
// applies to a request's descriptor that matches it. Its fields are
// those of the YAML, read-only.
type Rule struct {
	// Domain is the rule's domain.
	Domain string
	// Path is the rule's place in its domain as envoyproxy/ratelimit
	// names it in its statistics: "domain.key1_value1.subkey1".
	Path string
	// File and Line say where the rule's descriptor is written.
	File string
	Line int
	// Name is rate_limit.name, "" when not given: what replaces names.
	Name string
	// Unit and RequestsPerUnit are rate_limit's: RequestsPerUnit per
	// Unit. Unit is UnitUnknown for an unlimited rule and for one whose
	// window is a ratekit period.
	Unit            Unit
	RequestsPerUnit uint32
	// Window is the length of the rule's window (or the time its bucket
	// takes to refill RequestsPerUnit): Unit's (Unit.Duration), or the
	// period given. For a calendar limit it is the period's nominal
	// length, as its decisions' Window says (a month of 30 days), while
	// each of its windows is the calendar period a decision falls in: a
	// month of 28 to 31 days, a day of 23 to 25 hours across a change of
	// daylight saving time.
	Window time.Duration
	// Unlimited is rate_limit.unlimited: the descriptor matches, and is
	// never limited nor counted.
	Unlimited bool
	// Replaces are the names of the rules this one replaces
	// (rate_limit.replaces): when both match descriptors of one request,
	// the replaced rule is neither checked nor counted.
	Replaces []string
	// The descriptor's flags, as envoyproxy/ratelimit reads them:
	// ShadowMode reports a denial without enforcing it; QuotaMode makes
	// the descriptor a quota descriptor (a request is over its limit
	// when every quota descriptor is); DetailedMetric and ValueToMetric
	// say how statistics name the descriptor; ShareThreshold (a wildcard
	// value only) counts every value the wildcard matches together.
	ShadowMode, QuotaMode, DetailedMetric, ValueToMetric, ShareThreshold bool
	// Metadata is the descriptor's metadata, as YAML decodes it; nil
	// when not given.
	Metadata map[string]any
	// Algorithm names the algorithm that decides the rule:
	// "fixedwindow" (an epoch-aligned fixed window, envoyproxy/ratelimit's
	// own) unless the rule says otherwise.
	Algorithm string
	// Limits are the limits the rule decides a request against, each
	// built once, at Parse: the rate_limit's own, then those of its also
	// (decided at once, counted by all or none); none for an unlimited
	// rule and a rule of requests_per_unit 0 (it denies every request).
	// The rule's Unit, RequestsPerUnit, Window and Algorithm are its
	// first limit's.
	Limits []Limit
	// FailureMode is rate_limit.failure_mode (ratekit's key): what the
	// rule decides while its store fails or answers later than
	// Options.Failsafe.Timeout, one of FailureModes: "open" allows,
	// "closed" denies, "local" decides on Options.LocalStore. "" (not
	// given) returns the store's error.
	FailureMode string
	failureAt   fieldAt

	index  int           // in Config.rules
	params []core.Params // Limits' Params, given with each request
	// plainStats: the statistics of every descriptor that matches the
	// rule are named Path (no detailed_metric nor value_to_metric).
	plainStats bool
}

// Limit is one limit of a rule: the rate_limit's own, or one of its
// also (ratekit's key: several limits decided at once), with its
// parameters, given with each request it decides (core.Request.Params).
type Limit struct {
	// Name is the limit's name: rate_limit.name for the rule's own, an
	// also's name for its (ratekit's key); "" when not given. A status
	// reports the name of the limit that binds (Status.Name).
	Name string
	// RequestsPerUnit per Unit (UnitUnknown for a period), in windows of
	// Window, by Algorithm.
	RequestsPerUnit uint32
	Unit            Unit
	Window          time.Duration
	Algorithm       string
	// Params are the limit's algorithm and values.
	Params core.Params
	// Penalty, when positive, blocks a descriptor's key for this long
	// once the limit denies it (ratekit.Limit.Penalty).
	Penalty time.Duration

	calendar bool // decided by a limiter with a clock
	// Where its calendar and penalty are written, for errors of Set.
	calendarAt, penaltyAt fieldAt
}

// fieldAt is a field of a file: its line and its path.
type fieldAt struct {
	line  int
	field string
}

// node is one level of a domain's descriptors: envoyproxy/ratelimit's
// rateLimitDescriptor.
type node struct {
	children  map[string]*node // by "key" or "key_value"
	wildcards []wildcard       // the children whose "key_value" holds '*', in file order
	rule      *Rule
	share     bool   // share_threshold
	toMetric  bool   // value_to_metric
	pattern   string // its "key_value" when share is set
}

// wildcard is a child whose "key_value" holds a '*': parts is it split
// at each '*', each of which matches any run of bytes.
type wildcard struct {
	key   string
	parts []string
}

// match reports whether s matches w, as envoyproxy/ratelimit's
// wildcardMatch does.
func (w *wildcard) match(s string) bool {
	parts := w.parts
	if len(parts) == 1 {
		return parts[0] == s
	}
	if !strings.HasPrefix(s, parts[0]) || !strings.HasSuffix(s, parts[len(parts)-1]) {
		return false
	}
	fixed := 0
	for _, p := range parts {
		fixed += len(p)
	}
	if len(s) < fixed {
		return false
	}
	rest := s[len(parts[0]) : len(s)-len(parts[len(parts)-1])]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// Domains returns the configuration's domains, sorted.
func (c *Config) Domains() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Rules returns every rule of the configuration, in the order of the
// files and of the descriptors in each.
func (c *Config) Rules() []*Rule {
	if c == nil {
		return nil
	}
	return slices.Clone(c.rules)
}

// Match returns the rule that applies to a descriptor of domain made of
// entries, as envoyproxy/ratelimit finds it, and whether the domain is
// in the configuration. At each level, in order, it tries the entry's
// key and value, then the level's wildcard values in file order, then
// the entry's key alone (the key's default); a rule applies only when
// its descriptor is matched by the last entry (the depths agree), and
// once a value matched, a miss deeper down finds nothing (no fallback to
// the key's default). A matched descriptor with no rate_limit matches
// no rule: it is not limited. A nil Rule means no limit applies.
func (c *Config) Match(domain string, entries []Entry) (*Rule, bool) {
	if c == nil {
		return nil, false
	}
	dom := c.domains[domain]
	if dom == nil {
		return nil, false
	}
	var m matcher
	rule, _ := m.match(dom, domain, entries, nil)
	return rule, true
}

// matcher holds the memory a match builds its lookup strings in.
type matcher struct {
	fk []byte
}

// match walks entries down dom, returning the rule that applies (nil:
// none) and appending to key the descriptor's storage key,
// envoyproxy/ratelimit's cache key without its window: domain, then each entry's
// key and value (a shared wildcard's pattern instead of the value), all
// joined by '_'. key is complete only when the rule is not nil.
func (m *matcher) match(dom *node, domain string, entries []Entry, key []byte) (*Rule, []byte) {
	key = append(key, domain...)
	var rule *Rule
	at := dom
	for i, e := range entries {
		m.fk = append(append(append(m.fk[:0], e.Key...), '_'), e.Value...)
		fk := unsafe.String(unsafe.SliceData(m.fk), len(m.fk)) // read only while m.fk is
		next := at.children[fk]
		wild := false
		if next == nil {
			for j := range at.wildcards {
				if w := &at.wildcards[j]; w.match(fk) {
					next, wild = at.children[w.key], true
					break
				}
			}
		}
		if next == nil {
			next = at.children[e.Key]
		}
		key = append(append(append(key, '_'), e.Key...), '_')
		if wild && next.share {
			key = append(key, strings.TrimPrefix(next.pattern, fk[:len(e.Key)+1])...)
		} else {
			key = append(key, e.Value...)
		}
		if next == nil {
			break
		}
		if next.rule != nil && i == len(entries)-1 {
			rule = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		at = next
	}
	return rule, key
}

// StatsKey returns the name envoyproxy/ratelimit gives the statistics of
// a descriptor of domain made of entries that matched rule (Match): the
// rule's Path, but with detailed_metric (each entry's key and value) and
// value_to_metric (the values of the descriptors that set it).
func (c *Config) StatsKey(domain string, entries []Entry, rule *Rule) string {
	if rule == nil {
		return ""
	}
	if rule.plainStats {
		return rule.Path
	}
	var m matcher
	return string(c.appendStatsKey(nil, &m, domain, entries, rule))
}

// statsMode is which of envoyproxy/ratelimit's statistics names
// appendStatsKey builds.
type statsMode int

const (
	statsToMetric statsMode = iota // the default, and value_to_metric's
	statsDetailed                  // detailed_metric's
	statsShared                    // detailed_metric's, when a shared wildcard matched
)

// appendStatsKey appends StatsKey's name to b.
func (c *Config) appendStatsKey(b []byte, m *matcher, domain string, entries []Entry, rule *Rule) []byte {
	dom := c.domains[domain]
	if dom == nil {
		return append(b, rule.Path...)
	}
	if !rule.DetailedMetric {
		b, _ = walkStats(b, m, dom, domain, entries, statsToMetric)
		return b
	}
	at := len(b)
	b, shared := walkStats(b, m, dom, domain, entries, statsShared)
	if shared {
		return b
	}
	b, _ = walkStats(b[:at], m, dom, domain, entries, statsDetailed)
	return b
}

// walkStats appends the statistics name of mode to b, walking entries
// down dom as match does, and reports whether a shared wildcard matched.
func walkStats(b []byte, m *matcher, dom *node, domain string, entries []Entry, mode statsMode) ([]byte, bool) {
	b = append(b, domain...)
	shared := false
	at := dom
	for _, e := range entries {
		m.fk = append(append(append(m.fk[:0], e.Key...), '_'), e.Value...)
		fk := unsafe.String(unsafe.SliceData(m.fk), len(m.fk))
		b = append(b, '.')
		if mode == statsDetailed {
			b = append(b, fk...)
		} else {
			b = append(b, e.Key...)
		}
		next, how, wildKey := at.children[fk], matchedValue, ""
		if next == nil {
			for j := range at.wildcards {
				if w := &at.wildcards[j]; w.match(fk) {
					next, how, wildKey = at.children[w.key], matchedWildcard, w.key
					break
				}
			}
		}
		if next == nil {
			next, how = at.children[e.Key], matchedKey
		}
		if next == nil {
			break
		}
		prefix := fk[:len(e.Key)+1]
		switch {
		case mode == statsShared && how == matchedWildcard && next.share:
			b = append(append(b, '_'), strings.TrimPrefix(next.pattern, prefix)...)
			shared = true
		case mode == statsShared:
			if e.Value != "" {
				b = append(append(b, '_'), e.Value...)
			}
		case mode == statsToMetric:
			value := ""
			switch how {
			case matchedWildcard:
				switch {
				case next.share:
					value = strings.TrimPrefix(next.pattern, prefix)
				case next.toMetric:
					value = e.Value
				default:
					value = strings.TrimPrefix(wildKey, prefix)
				}
			case matchedValue:
				value = e.Value
			case matchedKey:
				if next.toMetric {
					value = e.Value
				}
			}
			if value != "" {
				b = append(append(b, '_'), value...)
			}
		}
		if len(next.children) == 0 {
			break
		}
		at = next
	}
	return b, shared
}

const (
	matchedValue = iota
	matchedWildcard
	matchedKey
)

// Dump describes every rule, one line each, as envoyproxy/ratelimit's
// /rlconfig does: "domain.key_value: unit=MINUTE requests_per_unit=20,
// shadow_mode: false, quota_mode: false".
func (c *Config) Dump() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, r := range c.rules {
		fmt.Fprintf(&b, "%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t\n",
			r.Path, strings.ToUpper(r.Unit.String()), r.RequestsPerUnit, r.ShadowMode, r.QuotaMode)
	}
	return b.String()
}
