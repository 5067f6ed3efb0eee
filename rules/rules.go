package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// ErrNoConfig is returned by a decision of Rules that has no
// configuration in force.
var ErrNoConfig = errors.New("rules: no rate limit configuration loaded")

// ErrRequest is what an error about a request wraps: an empty domain, no
// descriptors, a descriptor without entries, an entry without a key, a negative cost, an override of no
// unit.
var ErrRequest = errors.New("rules: invalid request")

// DefaultPrefix begins every storage key of Rules when Options.Prefix is
// empty.
const DefaultPrefix = "ratekit:rules:"

// Options configure Rules.
type Options struct {
	// Prefix begins every storage key, DefaultPrefix when empty; each
	// algorithm adds its name: a descriptor's counter of the default
	// algorithm is at Prefix + "fixedwindow:{" + its key + "}". It must
	// not contain '{' or '}'.
	Prefix string
	// Clock, when set, gives the time of every decision; when nil the
	// store's clock decides (the Redis server's TIME), but for calendar
	// windows, which follow this process's clock (time.Now).
	Clock core.Clock
	// Wrap, when set, wraps every limiter Rules builds when it builds
	// it (one per algorithm; one per rule of several limits or with a
	// penalty, at each Set; under Atomic, one per kind of request):
	// failsafe, denycache, otelratekit, or a function of the caller's.
	// Decisions go through what it returns.
	Wrap func(core.Limiter) (core.Limiter, error)
	// ShadowMode is envoyproxy/ratelimit's SHADOW_MODE: a request is
	// always allowed (Result.Allowed), while each Status still says what
	// its limit decided.
	ShadowMode bool
	// QuotaMode is envoyproxy/ratelimit's QUOTA_MODE: every descriptor
	// is a quota descriptor.
	QuotaMode bool
	// Atomic decides the descriptors of a request all at once, in one
	// script, by all of them or by none: either the request is allowed and
	// counted at every descriptor, or it is denied and counted at none (a
	// request one descriptor denies spends no other's quota). Off, each
	// is decided on its own, as envoyproxy/ratelimit does. The counters
	// of a domain then share one Redis Cluster slot, the domain's (their
	// storage keys are Prefix + algorithm + ":{" + domain + "}" + the
	// descriptor's key, not the keys of the default), every descriptor of
	// a request has one cost, a request checks at most
	// ratekit.MaxPolicyLimits limits, and rules with a penalty are
	// refused. Shadow descriptors are counted with the others and never
	// deny; quota descriptors deny together, when each is over its limit
	// (a store round trip more for each that is). Descriptors that count
	// at one counter (given twice, or two values of one share_threshold
	// rule) are counted there once, by the request's cost (docs/rules.md).
	Atomic bool
	// Failsafe configures the failsafe.Limiter that decides a rule with a
	// failure_mode (Rule.FailureMode) while its store fails: its Timeout
	// bounds each store call of such a rule (0: only the caller's
	// context does, and a call it ends is the caller's error, not the
	// mode's), RetryInterval, MaxInFlight, OnError, Logger and Clock are
	// its own; Limiter, Mode and Local are set by Rules for each rule.
	// Rules of one algorithm and one mode share one failsafe.Limiter,
	// kept across reloads. It wraps what Wrap returns.
	Failsafe failsafe.Config
	// LocalStore is the store a rule of failure_mode local decides on
	// while the store fails: typically a memory.Store of the caller's
	// (who closes it). A configuration with such a rule is refused
	// without it.
	LocalStore core.ScriptRunner
	// OnLoad, when set, is called after every load by Update and Watch:
	// with the configuration put in force and a nil error, or with a nil
	// Config and the error that kept the one in force.
	OnLoad func(*Config, error)
	// Logger, when set, gets a line for every load by Update and Watch:
	// Info when it succeeded, Error when it failed.
	Logger *slog.Logger
}

// Rules decides requests, each a domain and descriptors, against the
// configuration in force, on one store. It builds one limiter per
// algorithm when it is made, and each rule's parameters when its
// configuration is parsed, so that a decision matches and decides
// (core.Request.Params) without building anything. Safe for concurrent
// use; every decision sees one configuration, the one in force when it
// started.
type Rules struct {
	opts  Options
	store core.ScriptRunner
	clock core.Clock // for calendar windows and requests_per_unit 0

	// Built by New, read only after it.
	limiters    map[string]core.Limiter // by algorithm, wrapped
	calendar    core.Limiter            // a fixed window with a clock, wrapped
	calendarRaw *ratekit.Limiter
	algIndex    map[string]uint8 // index in algorithms.All by name
	algNames    []string
	remote      bool             // the store is not in this process: batch what can be
	manyDefault *ratekit.Limiter // the default algorithm's, when unwrapped

	mu     sync.Mutex
	raw    map[string]*ratekit.Limiter // unwrapped, for policies; under mu
	local  map[string]*ratekit.Limiter // on Options.LocalStore; under mu
	guards map[guardKey]core.Limiter   // failure modes' failsafes; under mu

	state     atomic.Pointer[state] // the configuration in force
	keys      interner
	overrides overrides
	policies  policies
	scratch   sync.Pool
	succeeded atomic.Uint64
	failed    atomic.Uint64
}

// state is a configuration in force, with the limiter of each rule.
type state struct {
	cfg      *Config
	limiters []core.Limiter // by Rule.index
	// many is each rule's limiter when nothing wraps it (by Rule.index;
	// else nil): the descriptors of one such limiter can go in one
	// AllowMany, which wrappers do not offer.
	many []*ratekit.Limiter
}

// New returns Rules deciding on store with cfg in force (nil: none until
// Set; decisions fail with ErrNoConfig until then).
func New(store core.ScriptRunner, cfg *Config, opts Options) (*Rules, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	r := &Rules{opts: opts, clock: opts.Clock, store: store, limiters: map[string]core.Limiter{},
		raw: map[string]*ratekit.Limiter{}, local: map[string]*ratekit.Limiter{}, guards: map[guardKey]core.Limiter{}}
	if r.clock == nil {
		r.clock = core.ClockFunc(time.Now)
	}
	_, inProcess := store.(core.LocalStore)
	r.remote = !inProcess
	r.algIndex = map[string]uint8{}
	for i, a := range algorithms.All {
		r.algIndex[a.Name] = uint8(i)
		r.algNames = append(r.algNames, a.Name)
		l, err := a.New(store, a.Defaults(), opts.Clock, opts.Prefix+a.Name+":")
		if err != nil {
			return nil, err
		}
		r.raw[a.Name] = l
		if r.limiters[a.Name], err = r.wrap(l); err != nil {
			return nil, err
		}
	}
	cal, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Second, Prefix: opts.Prefix + "fixedwindow:", Clock: r.clock})
	if err != nil {
		return nil, err
	}
	r.calendarRaw, r.raw["calendar"] = cal, cal
	if r.calendar, err = r.wrap(cal); err != nil {
		return nil, err
	}
	r.manyDefault = r.unwrapped(DefaultAlgorithm)
	r.scratch.New = func() any { return new(scratch) }
	if cfg != nil {
		if err := r.Set(cfg); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// limiterAt returns the unwrapped limiter of a rule's limit j of
// algorithm alg: the algorithm's own for the first limit of a rule,
// one of a prefix of its own for each other place (a policy's limits have
// prefixes of their own), built once.
func (r *Rules) limiterAt(alg string, j int, calendar bool) (*ratekit.Limiter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limiterOn(r.store, r.raw, alg, j, calendar)
}

// limiterOn returns the limiter on store of limit j of algorithm alg,
// from cache (the store's limiters by name) or built into it: the
// algorithm's own for a rule's first limit, one of a prefix of its own
// for each other place, and for a calendar first limit without
// Options.Clock a fixed window on this process's clock. Called with r.mu
// held.
func (r *Rules) limiterOn(store core.ScriptRunner, cache map[string]*ratekit.Limiter, alg string, j int, calendar bool) (*ratekit.Limiter, error) {
	name, clock, prefix := alg, r.opts.Clock, ""
	switch {
	case j == 0 && calendar && r.opts.Clock == nil:
		name, clock, prefix = "calendar", r.clock, r.opts.Prefix+"fixedwindow:"
	case j > 0:
		name = fmt.Sprintf("%s:%d", alg, j)
	}
	if l, ok := cache[name]; ok {
		return l, nil
	}
	if prefix == "" {
		prefix = r.opts.Prefix + name + ":"
	}
	a, _ := algorithms.Lookup(alg)
	l, err := a.New(store, a.Defaults(), clock, prefix)
	if err != nil {
		return nil, err
	}
	cache[name] = l
	return l, nil
}

// unwrapped returns the limiter New built for base (an algorithm, or
// "calendar") when Options.Wrap does not wrap it, else nil.
func (r *Rules) unwrapped(base string) *ratekit.Limiter {
	switch {
	case r.opts.Wrap != nil:
		return nil
	case base == "calendar":
		return r.calendarRaw
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.raw[base]
}

func (r *Rules) wrap(l *ratekit.Limiter) (core.Limiter, error) {
	if r.opts.Wrap == nil {
		return l, nil
	}
	w, err := r.opts.Wrap(l)
	if err != nil {
		return nil, err
	}
	if w == nil || w.MaxCost() < 1 {
		return nil, fmt.Errorf("%w: Options.Wrap returned a limiter that cannot decide", core.ErrInvalidConfig)
	}
	return w, nil
}

// Set puts cfg in force: every decision that starts after Set returns
// decides with it. The keys' state stays: what a rule's counts become
// when its limits change is what its algorithm says (docs/rules.md).
// A rule the Options cannot decide (a penalty or a failure_mode under
// Atomic, a calendar decided with other limits without Clock, a
// failure_mode local without LocalStore) is a *ConfigError naming its
// file, line and field; the configuration in force then stays.
func (r *Rules) Set(cfg *Config) error {
	if cfg == nil {
		return fmt.Errorf("%w: Set(nil)", ErrConfig)
	}
	st := &state{cfg: cfg, limiters: make([]core.Limiter, len(cfg.rules)), many: make([]*ratekit.Limiter, len(cfg.rules))}
	for i, rule := range cfg.rules {
		if len(rule.Limits) == 0 {
			continue
		}
		calendar, penalty := false, false
		var calendarAt, penaltyAt fieldAt
		for _, l := range rule.Limits {
			if l.calendar && !calendar {
				calendar, calendarAt = true, l.calendarAt
			}
			if l.Penalty > 0 && !penalty {
				penalty, penaltyAt = true, l.penaltyAt
			}
		}
		switch {
		case r.opts.Atomic && penalty:
			return &ConfigError{File: rule.File, Line: penaltyAt.line, Field: penaltyAt.field, Msg: "a rule with a penalty cannot be decided with Options.Atomic (the penalty would block the whole domain)"}
		case calendar && r.opts.Clock == nil && (r.opts.Atomic || len(rule.Limits) > 1):
			return &ConfigError{File: rule.File, Line: calendarAt.line, Field: calendarAt.field, Msg: "a calendar limit decided with others (Options.Atomic, also) needs Options.Clock: limits decided at once are decided at one time, and a calendar follows this process's clock"}
		case r.opts.Atomic && rule.FailureMode != "":
			return &ConfigError{File: rule.File, Line: rule.failureAt.line, Field: rule.failureAt.field, Msg: "failure_mode cannot be decided with Options.Atomic: a request's descriptors are decided in one store call, whose failure one mode must answer; give Options.Wrap a failsafe.Limiter instead"}
		case r.opts.Atomic:
			// decideAtomic decides with policies of its own.
		case len(rule.Limits) == 1 && !penalty:
			base, lim := rule.Algorithm, r.limiters[rule.Algorithm]
			if calendar {
				base, lim = "calendar", r.calendar
			}
			st.limiters[i] = lim
			if rule.FailureMode == "" {
				st.many[i] = r.unwrapped(base)
				break
			}
			l := rule.Limits[0]
			local := func() (core.Limiter, error) { return r.localLimiter(l.Algorithm, 0, l.calendar) }
			var err error
			if st.limiters[i], err = r.guard(rule, lim, base, local); err != nil {
				return err
			}
		default:
			p, err := r.policy(rule, r.limiterAt)
			if err != nil {
				return err
			}
			if st.limiters[i], err = r.wrap(p); err != nil {
				return err
			}
			if rule.FailureMode == "" {
				if r.opts.Wrap == nil {
					st.many[i] = p
				}
				break
			}
			local := func() (core.Limiter, error) { return r.policy(rule, r.localLimiter) }
			if st.limiters[i], err = r.guard(rule, st.limiters[i], "", local); err != nil {
				return err
			}
		}
	}
	r.state.Store(st)
	return nil
}

// policy builds the policy of a rule of several limits or a penalty, its
// limits built by at.
func (r *Rules) policy(rule *Rule, at func(alg string, j int, calendar bool) (*ratekit.Limiter, error)) (*ratekit.Limiter, error) {
	limits := make([]ratekit.Limit, len(rule.Limits))
	for j, l := range rule.Limits {
		lim, err := at(l.Algorithm, j, l.calendar)
		if err != nil {
			return nil, err
		}
		limits[j] = ratekit.Limit{Name: fmt.Sprintf("l%d", j), Limiter: lim, Penalty: l.Penalty}
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: limits, PenaltyPrefix: r.opts.Prefix + "penalty:"})
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", rule.File, rule.Line, err)
	}
	return p, nil
}

// Config returns the configuration in force, nil when none is.
func (r *Rules) Config() *Config {
	if st := r.state.Load(); st != nil {
		return st.cfg
	}
	return nil
}

// Decide decides a request of domain with descriptors, each of cost hits
// unless it gives its own (Descriptor.Hits), as envoyproxy/ratelimit's
// ShouldRateLimit does: each descriptor is matched to its rule (Match)
// and decided on its own, and a descriptor over its limit counts nothing
// while the others count. A cost of 0 asks without counting (Peek): OK
// when a request of 1 would pass. A cost above a rule's limit is over
// it, and counts nothing.
//
// An error means no verdict, and the Result is the zero Result (nothing
// allowed, no statuses): the store's (wrapping core.ErrStore),
// ErrNoConfig, or one wrapping ErrRequest or core.ErrInvalidKey for a
// bad request.
func (r *Rules) Decide(ctx context.Context, domain string, descriptors []Descriptor, hits int64) (Result, error) {
	var res Result
	err := r.DecideTo(ctx, &res, domain, descriptors, hits)
	return res, err
}

// DecideTo is Decide, writing its result into res and reusing the memory
// of res.Statuses: with a configuration loaded once and a Result reused,
// a decision on the memory store allocates nothing, but for the Limits of
// a policy's decision: one allocation for each descriptor whose rule has
// several limits (also) or a penalty, and under Options.Atomic one per
// store call (one per request, and one more for each quota descriptor
// that denies it).
func (r *Rules) DecideTo(ctx context.Context, res *Result, domain string, descriptors []Descriptor, hits int64) error {
	err := r.decideTo(ctx, res, domain, descriptors, hits)
	if err != nil {
		// No verdict: nothing is allowed, and no status is reported.
		res.Allowed, res.Statuses = false, res.Statuses[:0]
	}
	return err
}

func (r *Rules) decideTo(ctx context.Context, res *Result, domain string, descriptors []Descriptor, hits int64) error {
	st := r.state.Load()
	if st == nil {
		return ErrNoConfig
	}
	if hits < 0 {
		return fmt.Errorf("%w: hits %d is negative", ErrRequest, hits)
	}
	if domain == "" {
		return fmt.Errorf("%w: rate limit domain must not be empty", ErrRequest)
	}
	if len(descriptors) == 0 {
		return fmt.Errorf("%w: rate limit descriptor list must not be empty", ErrRequest)
	}
	for i := range descriptors {
		if len(descriptors[i].Entries) == 0 {
			return fmt.Errorf("%w: descriptor %d has no entries", ErrRequest, i)
		}
		for j := range descriptors[i].Entries {
			if descriptors[i].Entries[j].Key == "" {
				return fmt.Errorf("%w: descriptor %d's entry %d has no key", ErrRequest, i, j)
			}
		}
	}
	n := len(descriptors)
	if cap(res.Statuses) < n {
		res.Statuses = make([]Status, n)
	}
	res.Statuses = res.Statuses[:n]
	res.Allowed = true
	sc := r.scratch.Get().(*scratch)
	defer r.scratch.Put(sc)
	sc.reset(n)
	dom := st.cfg.domains[domain]

	// Match every descriptor first: replaces needs them all.
	for i := range descriptors {
		d := &descriptors[i]
		s := &res.Statuses[i]
		*s = Status{Code: OK}
		if dom == nil {
			s.DomainNotFound = true
			continue
		}
		if d.Limit != nil {
			p, err := r.overrides.params(*d.Limit)
			if err != nil {
				return err
			}
			s.Override, s.Checked = true, true
			s.RequestsPerUnit, s.Unit = d.Limit.RequestsPerUnit, d.Limit.Unit
			sc.params[i] = p
			sc.buf = append(sc.buf[:0], domain...)
			for _, e := range d.Entries {
				sc.buf = append(append(append(append(sc.buf, '_'), e.Key...), '_'), e.Value...)
			}
			sc.keys[i] = r.keys.get(sc.buf)
			sc.buf = append(sc.buf[:0], domain...)
			for _, e := range d.Entries {
				sc.buf = append(append(sc.buf, '.'), e.Key...)
				if e.Value != "" {
					sc.buf = append(append(sc.buf, '_'), e.Value...)
				}
			}
			s.StatsKey = r.keys.get(sc.buf)
			continue
		}
		var rule *Rule
		rule, sc.buf = sc.m.match(dom, domain, d.Entries, sc.buf[:0])
		s.Rule = rule
		if rule == nil {
			continue
		}
		if rule.plainStats {
			s.StatsKey = rule.Path
		} else {
			sc.stats = st.cfg.appendStatsKey(sc.stats[:0], &sc.m, domain, d.Entries, rule)
			s.StatsKey = r.keys.get(sc.stats)
		}
		if rule.Unlimited {
			s.Unlimited, s.Remaining = true, math.MaxUint32
			continue
		}
		sc.keys[i] = r.keys.get(sc.buf)
	}
	// A rule named in another matched rule's replaces is neither checked
	// nor counted (an unlimited one stays unlimited, as in envoy).
	for j := range res.Statuses {
		rj := res.Statuses[j].Rule
		if rj == nil || rj.Name == "" || rj.Unlimited {
			continue
		}
	replaced:
		for i := range res.Statuses {
			if ri := res.Statuses[i].Rule; ri != nil {
				for _, name := range ri.Replaces {
					if name == rj.Name {
						res.Statuses[j].Replaced = true
						break replaced
					}
				}
			}
		}
	}
	// What each descriptor checks, and at what cost.
	for i := range res.Statuses {
		s := &res.Statuses[i]
		if s.Rule != nil && !s.Replaced && !s.Unlimited {
			s.Checked, s.RequestsPerUnit, s.Unit, s.Name = true, s.Rule.RequestsPerUnit, s.Rule.Unit, s.Rule.Name
		}
		if !s.Checked {
			continue
		}
		s.Hits = hits
		if h := descriptors[i].Hits; h != nil {
			if *h < 0 {
				return fmt.Errorf("%w: descriptor %d's hits %d is negative", ErrRequest, i, *h)
			}
			s.Hits = *h
		}
		if !s.Override && len(s.Rule.params) > 0 {
			sc.params[i] = s.Rule.params[0]
		}
	}
	denied := false
	if r.opts.Atomic {
		var err error
		if denied, err = r.decideAtomic(ctx, res.Statuses, sc, domain); err != nil {
			return err
		}
	} else {
		err := r.decideEach(ctx, st, res.Statuses, sc)
		clear(sc.pending) // what the pool keeps holds no status nor limiter
		if err != nil {
			return err
		}
	}
	// envoyproxy/ratelimit's verdict: over the limit when a descriptor
	// not in quota mode is, or when every quota descriptor is.
	failed, quotas, quotaFailed := 0, 0, 0
	for i := range res.Statuses {
		s := &res.Statuses[i]
		if s.Unlimited {
			continue
		}
		quota := r.quota(s)
		if s.Code == OverLimit {
			if quota {
				quotaFailed++
			} else {
				failed++
			}
		}
		if quota {
			quotas++
		}
	}
	res.Allowed = r.opts.ShadowMode || !(denied || failed > 0 || (quotas > 0 && quotas == quotaFailed))
	return nil
}

// quota reports whether s is a quota descriptor.
func (r *Rules) quota(s *Status) bool {
	return r.opts.QuotaMode || (s.Rule != nil && s.Rule.QuotaMode && !s.Replaced)
}

// decideEach decides every checked descriptor on its own, as
// envoyproxy/ratelimit does. On a store that is not in this process, the
// descriptors whose limiter is one go in one AllowMany: a request's
// descriptors cost one round trip, not one each (envoyproxy/ratelimit
// pipelines them too).
func (r *Rules) decideEach(ctx context.Context, st *state, statuses []Status, sc *scratch) error {
	sc.pending = sc.pending[:0]
	for i := range statuses {
		s := &statuses[i]
		if !s.Checked {
			continue
		}
		p := pending{status: s, lim: r.limiters[DefaultAlgorithm], many: r.manyDefault, req: core.Request{Key: sc.keys[i], N: s.Hits}}
		if s.Override {
			if sc.params[i] != nil {
				p.req.Params = sc.params[i : i+1]
			}
		} else {
			p.lim, p.many, p.req.Params = st.limiters[s.Rule.index], st.many[s.Rule.index], s.Rule.params
		}
		if p.req.Params == nil {
			r.zero(s)
			continue
		}
		least := p.req.Params[0].Limit()
		for _, lp := range p.req.Params[1:] {
			least = min(least, lp.Limit())
		}
		switch {
		case p.req.N == 0:
			p.req.N, p.req.Op = 1, core.OpPeek
		case p.req.N > least:
			p.req.N, p.req.Op, p.over = 1, core.OpPeek, true
		}
		sc.pending = append(sc.pending, p)
	}
	for j := 0; j < len(sc.pending); {
		p := &sc.pending[j]
		// The descriptors that follow go with it while they can: every
		// key then sees its requests in the request's order (an override
		// counts at a rule's key).
		n := 1
		for r.remote && p.many != nil && p.req.Op == core.OpAllow && j+n < len(sc.pending) {
			if q := &sc.pending[j+n]; q.many != p.many || q.req.Op != core.OpAllow {
				break
			}
			n++
		}
		if n == 1 {
			d, err := p.lim.Decide(ctx, p.req)
			if err != nil {
				return err
			}
			r.decided(p, d)
			j++
			continue
		}
		sc.reqs = sc.reqs[:0]
		for k := j; k < j+n; k++ {
			sc.reqs = append(sc.reqs, sc.pending[k].req)
		}
		for k, res := range p.many.AllowMany(ctx, sc.reqs) {
			if res.Err != nil {
				return res.Err
			}
			r.decided(&sc.pending[j+k], res.Decision)
		}
		j += n
	}
	return nil
}

// pending is a descriptor's decision to be made: its status, its limiter
// and request, and whether its cost is above the limit (over: the request
// peeks).
type pending struct {
	status *Status
	lim    core.Limiter
	many   *ratekit.Limiter // lim, unwrapped; nil when wrapped
	req    core.Request
	over   bool
}

// decided writes the store's decision d into p's status.
func (r *Rules) decided(p *pending, d core.Decision) {
	s, over := p.status, p.over
	s.Decision = d
	s.Remaining = uint32(min(max(d.Remaining, 0), math.MaxUint32))
	s.ResetAfter = d.ResetAfter
	if len(d.Limits) > 1 {
		// A rule of several limits reports the one that binds.
		s.bind(binding(d.Limits, d))
	}
	if over || !d.Allowed {
		s.Code = OverLimit
		if d.RetryAfter > s.ResetAfter {
			s.ResetAfter = d.RetryAfter
		}
		if over {
			s.Decision.Allowed = false
		}
	}
	r.shadow(s)
}

// binding returns the index of the limit of lds whose decision is d's:
// a denial's longest RetryAfter, or the least Remaining.
func binding(lds []core.LimitDecision, d core.Decision) int {
	for j, ld := range lds {
		if ld.Allowed == d.Allowed && ld.Remaining == d.Remaining && (d.Allowed || ld.RetryAfter == d.RetryAfter) {
			return j
		}
	}
	return 0
}

// zero decides a limit of 0 requests per unit: over, until its window
// ends.
func (r *Rules) zero(s *Status) {
	s.Code = OverLimit
	window := s.Unit.Duration()
	if s.Rule != nil {
		window = s.Rule.Window
	}
	if w := int64(window); w > 0 {
		s.ResetAfter = time.Duration(w - r.clock.Now().UnixNano()%w)
	}
	r.shadow(s)
}

// shadow turns a shadow_mode rule's denial into OK.
func (r *Rules) shadow(s *Status) {
	if s.Code == OverLimit && s.Rule != nil && s.Rule.ShadowMode && !s.Override {
		s.Code, s.Shadow = OK, true
	}
}

// scratch is the memory of one decision, pooled.
type scratch struct {
	m      matcher
	buf    []byte
	stats  []byte
	pp     []core.Params // decideAtomic's
	kk     []string
	idx    []int
	keys   []string
	params []core.Params
	// decideEach's
	pending []pending
	reqs    []core.Request
}

func (sc *scratch) reset(n int) {
	if cap(sc.keys) < n {
		sc.keys = make([]string, n)
		sc.params = make([]core.Params, n)
	}
	sc.keys = sc.keys[:n]
	sc.params = sc.params[:n]
	clear(sc.keys)
	clear(sc.params)
}
