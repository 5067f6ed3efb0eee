package ratekit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/params"
)

// Limit is one limit of a [Policy]: a limiter, the name it is reported
// under, and how it enforces.
type Limit struct {
	// Name names the limit in decisions and in HTTP headers: 1 to 64
	// bytes, a lowercase letter or '*' first, then lowercase letters,
	// digits, '_', '-', '.' or '*' (a structured-field key, RFC 8941).
	// Names are unique within a policy.
	Name string
	// Limiter is the limit's algorithm, configuration, store and key
	// prefix (for GCRA, the Limiter field of a *gcra.Limiter). Every limit
	// of a policy has a prefix of its own, and all share one store. A
	// policy decides all its limits at one time: the store's, when no
	// limit has a Clock, or the first limit's Clock, when every limit has
	// one (a calendar window, fixedwindow.NewCalendar, always has one: in
	// a policy with it, give the other limits a Clock, such as
	// core.ClockFunc(time.Now)). Limits with and without a Clock cannot
	// share a policy.
	Limiter *Limiter
	// Shadow makes the limit report without enforcing: it decides and
	// counts like the others, but its denial never denies a request; the
	// decision names it in ShadowDenied.
	Shadow bool
	// Penalty, when positive, blocks the key for this long when this limit
	// denies a request (AllowN): until the block ends every request on the
	// key is denied, and RetryAfter says when it ends. A whole number of
	// microseconds. A shadow limit's penalty never applies.
	Penalty time.Duration
}

// PolicyConfig configures a [Policy].
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
	OnShadowDeny func(ctx context.Context, key string, d PolicyDecision)
}

// DefaultPenaltyPrefix is the key prefix of penalty blocks when
// PolicyConfig.PenaltyPrefix is empty.
const DefaultPenaltyPrefix = "ratekit:penalty:"

// MaxPolicyLimits is the most limits a policy holds.
const MaxPolicyLimits = 16

// Policy decides each request against several limits of one key at once,
// in one script on the store: the request is allowed only if every
// enforced limit allows it, and then every limit counts it; when any
// denies, none counts anything (no "counter pollution"). Limits may run in
// shadow, and may block a key that exceeds them for a penalty time.
//
// All of a key's limits and its penalty block share the key's cluster slot
// (the user's key is the hash tag), so a policy works on Redis Cluster as
// on one node. A Policy is safe for concurrent use.
type Policy struct {
	limits   []Limit
	engines  []*engine.Engine
	names    []string
	script   *core.Script
	peek     *core.Script
	penalty  string // the penalty key prefix, "" when no limit has a penalty
	limit    int64  // the largest cost every limit accepts
	nargs    int    // the script's arguments after now, n and mode
	lendKeys bool   // the store copies the keys it keeps (engine.LendsKeys)
	onShadow func(ctx context.Context, key string, d PolicyDecision)
}

// LimitDecision is one limit's part of a [PolicyDecision].
type LimitDecision struct {
	// Name is the limit's name.
	Name string
	// Shadow reports that the limit ran in shadow.
	Shadow bool
	core.Decision
}

// PolicyDecision is a [Policy]'s answer to one request.
type PolicyDecision struct {
	// Allowed reports whether the request may proceed (and was counted, by
	// every limit that allowed it).
	Allowed bool
	// Limits holds each limit's decision, in the policy's order. While
	// the key is blocked they are what each limit would decide (Peek).
	Limits []LimitDecision
	// Denied names the enforced limits that denied the request.
	Denied []string
	// ShadowDenied names the shadow limits that would have denied it.
	ShadowDenied []string
	// Blocked reports that the key is blocked by a penalty: one in force,
	// or one this request started.
	Blocked bool
	// RetryAfter is, for a denied request, the wait until the same request
	// may pass as far as the limits that denied it and the block know: the
	// largest of their waits. Zero when allowed.
	RetryAfter time.Duration
	// Remaining is the smallest Remaining of the enforced limits, and 0
	// while the key is blocked.
	Remaining int64
}

// NewPolicy checks cfg and returns its Policy, or an error wrapping
// core.ErrInvalidConfig.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: ratekit.NewPolicy: %s", core.ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	if len(cfg.Limits) == 0 || len(cfg.Limits) > MaxPolicyLimits {
		return nil, bad("a policy holds 1 to %d limits, got %d", MaxPolicyLimits, len(cfg.Limits))
	}
	p := &Policy{limit: params.MaxCount, onShadow: cfg.OnShadowDeny}
	specs := make([]*engine.Spec, len(cfg.Limits))
	names := map[string]bool{}
	prefixes := map[string]bool{}
	for i, l := range cfg.Limits {
		if err := checkLimitName(l.Name); err != nil {
			return nil, bad("limit %d: %v", i, err)
		}
		if names[l.Name] {
			return nil, bad("two limits are named %q", l.Name)
		}
		names[l.Name] = true
		if l.Limiter == nil || l.Limiter.e == nil {
			return nil, bad("limit %q has no Limiter", l.Name)
		}
		e := l.Limiter.e
		if i > 0 && !same(e.Runner(), p.engines[0].Runner()) {
			return nil, bad("limit %q has another store than limit %q", l.Name, cfg.Limits[0].Name)
		}
		if i > 0 && (e.Clock() == nil) != (p.engines[0].Clock() == nil) {
			has, hasNot := l.Name, cfg.Limits[0].Name
			if e.Clock() == nil {
				has, hasNot = hasNot, has
			}
			return nil, bad("limit %q has a Clock and limit %q has none: a policy decides all its limits at one time, so give every limit a Clock (a calendar window always has one) or none", has, hasNot)
		}
		if prefixes[e.Prefix()] {
			return nil, bad("limit %q shares the prefix %q with another limit", l.Name, e.Prefix())
		}
		prefixes[e.Prefix()] = true
		if l.Penalty != 0 {
			if _, err := params.Micros("Penalty of limit "+l.Name, l.Penalty); err != nil {
				return nil, err
			}
			p.penalty = DefaultPenaltyPrefix
		}
		if cfg.Shadow {
			l.Shadow = true
		}
		p.limits = append(p.limits, l)
		p.engines = append(p.engines, e)
		p.names = append(p.names, l.Name)
		specs[i] = e.Spec()
		p.limit = min(p.limit, e.Limit())
		p.nargs += 2 + len(e.Params())
	}
	// The prefix is checked even when no limit has a penalty: a setting
	// that is wrong is refused, whether or not it is used yet.
	penalty := cmp.Or(cfg.PenaltyPrefix, DefaultPenaltyPrefix)
	if err := keyspace.CheckPrefix(penalty); err != nil {
		return nil, err
	}
	if prefixes[penalty] && (cfg.PenaltyPrefix != "" || p.penalty != "") {
		return nil, bad("PenaltyPrefix %q is a limit's prefix", penalty)
	}
	if p.penalty != "" {
		p.penalty = penalty
	}
	p.lendKeys = engine.LendsKeys(p.engines[0].Runner())
	p.script = engine.PolicyScript(specs)
	p.peek = core.NewScript(p.script.Name(), p.script.Lua(), p.script.Twin(), true)
	return p, nil
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

// Limits returns the policy's limits, in order (after PolicyConfig.Shadow
// applied). The slice is a copy.
func (p *Policy) Limits() []Limit {
	if p == nil {
		return nil
	}
	return append([]Limit(nil), p.limits...)
}

// MaxCost is the largest cost AllowN and Refund accept: the smallest of
// the limits' Limit.
func (p *Policy) MaxCost() int64 {
	if p == nil {
		return 0
	}
	return p.limit
}

// Allow is AllowN(ctx, key, 1).
func (p *Policy) Allow(ctx context.Context, key string) (PolicyDecision, error) {
	return p.run(ctx, key, 1, engine.ModeAllow)
}

// AllowN decides a request of cost n on key against every limit at once.
// It is allowed when every enforced limit allows it and no penalty blocks
// the key; then every limit that allowed it counts it. When denied,
// nothing is counted anywhere; the only write a denial makes is the
// penalty block it may start. n must be between 1 and MaxCost (an error
// wrapping core.ErrInvalidCost); keys and store failures are as for
// Limiter.AllowN.
func (p *Policy) AllowN(ctx context.Context, key string, n int64) (PolicyDecision, error) {
	return p.run(ctx, key, n, engine.ModeAllow)
}

// Peek reports the decision Allow would get now, and writes nothing.
func (p *Policy) Peek(ctx context.Context, key string) (PolicyDecision, error) {
	return p.run(ctx, key, 1, engine.ModePeek)
}

// Refund gives n back to every limit of key, at once: each takes n off
// what it has counted, as far as it can (see each algorithm's package doc
// for what a refund can undo), and the result is what Peek reports after
// it. Use it to count by outcome: allow first, then refund what should not
// have counted (a successful login, a response under 400, the tokens an
// LLM call did not use). A refund does not lift a penalty block. Every
// limit gives n back, including a shadow limit that would have denied the
// request and so did not count it: its count is then lower than what it
// counted, never below nothing.
func (p *Policy) Refund(ctx context.Context, key string, n int64) (PolicyDecision, error) {
	return p.run(ctx, key, n, engine.ModeRefund)
}

// Reset deletes key's state in every limit and its penalty block.
func (p *Policy) Reset(ctx context.Context, key string) error {
	if p == nil || len(p.engines) == 0 {
		return engine.ErrZero
	}
	for _, e := range p.engines {
		if err := e.Reset(ctx, key); err != nil {
			return err
		}
	}
	if p.penalty == "" {
		return nil
	}
	_, err := p.engines[0].Runner().RunScript(ctx, keyspace.ResetScript, []string{keyspace.Key(p.penalty, key, "")}, nil, nil)
	return err
}

func (p *Policy) run(ctx context.Context, key string, n int64, mode int64) (PolicyDecision, error) {
	if p == nil || len(p.engines) == 0 {
		return PolicyDecision{}, engine.ErrZero
	}
	if err := keyspace.CheckKey(key); err != nil {
		return PolicyDecision{}, err
	}
	if err := params.Cost(n, p.limit); err != nil {
		return PolicyDecision{}, err
	}
	e0 := p.engines[0]
	now, err := params.Now(e0.Clock())
	if err != nil {
		return PolicyDecision{}, err
	}
	if err := engine.Ended(ctx); err != nil {
		return PolicyDecision{}, err
	}
	f := policyFrames.Get().(*policyFrame)
	defer f.put()
	keys := f.keys[:0]
	if p.lendKeys {
		// Every key goes in one buffer, grown first so that no append
		// moves what the strings already point to (an escaped byte takes
		// three).
		need := (len(p.engines) + 1) * (3*len(key) + 2)
		for _, e := range p.engines {
			need += len(e.Prefix())
		}
		need += len(p.penalty)
		if cap(f.key) < need {
			f.key = make([]byte, 0, need)
		}
		b := f.key[:0]
		for _, e := range p.engines {
			at := len(b)
			b = keyspace.AppendKey(b, e.Prefix(), key, "")
			keys = append(keys, unsafe.String(&b[at], len(b)-at))
		}
		if p.penalty != "" {
			at := len(b)
			b = keyspace.AppendKey(b, p.penalty, key, "")
			keys = append(keys, unsafe.String(&b[at], len(b)-at))
		}
	} else {
		for _, e := range p.engines {
			keys = append(keys, keyspace.Key(e.Prefix(), key, ""))
		}
		if p.penalty != "" {
			keys = append(keys, keyspace.Key(p.penalty, key, ""))
		}
	}
	f.keys = keys
	args := append(f.args[:0], now, n, mode)
	for i, l := range p.limits {
		var shadow int64
		if l.Shadow {
			shadow = 1
		}
		args = append(args, shadow, int64(l.Penalty/time.Microsecond))
		args = p.engines[i].AppendParams(args, now)
	}
	s := p.script
	if mode == engine.ModePeek {
		s = p.peek
	}
	f.args = args
	reply, err := e0.Runner().RunScript(ctx, s, keys, args, f.reply[:0])
	if reply != nil {
		f.reply = reply
	}
	if err != nil {
		return PolicyDecision{}, err
	}
	d, err := p.decode(key, reply)
	if err == nil && mode == engine.ModeAllow && d.Allowed && len(d.ShadowDenied) > 0 && p.onShadow != nil {
		p.onShadow(ctx, key, d)
	}
	return d, err
}

// decode turns a policy script's reply into its decision.
func (p *Policy) decode(key string, reply []int64) (PolicyDecision, error) {
	size := len(p.engines)
	if len(reply) != 4*size+2 {
		return PolicyDecision{}, fmt.Errorf("%w: %w: %d limits got a reply of %d integers", core.ErrStore, core.ErrUnexpectedReply, size, len(reply))
	}
	block := reply[4*size:]
	if block[0] < 0 {
		return PolicyDecision{}, fmt.Errorf("%w: the penalty block at key %q (prefix %q) was not written by a ratekit policy; reset it or use another PenaltyPrefix", core.ErrCorruptState, key, p.penalty)
	}
	d := PolicyDecision{Limits: make([]LimitDecision, size), Remaining: -1, Blocked: block[1] == 1}
	var errs []error
	var retry time.Duration
	for i, e := range p.engines {
		ld, err := e.Decode(key, reply[4*i:4*i+4])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l := p.limits[i]
		d.Limits[i] = LimitDecision{Name: l.Name, Shadow: l.Shadow, Decision: ld}
		switch {
		case l.Shadow && !ld.Allowed:
			d.ShadowDenied = append(d.ShadowDenied, l.Name)
		case !l.Shadow && !ld.Allowed:
			d.Denied = append(d.Denied, l.Name)
			retry = max(retry, ld.RetryAfter)
		}
		if !l.Shadow && (d.Remaining < 0 || ld.Remaining < d.Remaining) {
			d.Remaining = ld.Remaining
		}
	}
	if len(errs) > 0 {
		return PolicyDecision{}, errors.Join(errs...)
	}
	if d.Remaining < 0 {
		d.Remaining = 0 // every limit in shadow: Remaining is not enforced
		for i, ld := range d.Limits {
			if i == 0 || ld.Remaining < d.Remaining {
				d.Remaining = ld.Remaining
			}
		}
	}
	if d.Blocked {
		retry = max(retry, time.Duration(block[0])*time.Microsecond)
		d.Remaining = 0
	}
	d.Allowed = len(d.Denied) == 0 && !d.Blocked
	if !d.Allowed {
		d.RetryAfter = retry
	}
	return d, nil
}

// same reports whether a and b are the same runner value.
func same(a, b core.ScriptRunner) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && vb.Comparable() && a == b
}

// policyFrame holds one call's buffers, reused across calls: the keys
// (built in key when the store copies what it keeps), the arguments and
// the reply.
type policyFrame struct {
	key   []byte
	keys  []string
	args  []int64
	reply []int64
}

var policyFrames = sync.Pool{New: func() any { return new(policyFrame) }}

// put clears the keys, which may point into key, and returns f to the pool.
func (f *policyFrame) put() {
	clear(f.keys)
	policyFrames.Put(f)
}
