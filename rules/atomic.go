package rules

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
)

// decideAtomic decides every checked descriptor of a request at once
// (Options.Atomic): one keyed policy of their limits, at Key domain, each
// at its own key (core.Request.Keys), counted by all or by none.
//
// envoy denies a request when a descriptor not in quota mode is over its
// limit, or when every quota descriptor is. Enforced limits are those of
// the first kind; quota descriptors are shadow limits but for one, whose
// limits are enforced: a request it denies is decided again with the
// next quota descriptor enforced, so that a request is counted only when
// one quota descriptor at least lets it through, and a request denied
// by them all counts nothing.
//
// denied reports that the request counted nothing because it was denied:
// the verdict, whatever the statuses say.
func (r *Rules) decideAtomic(ctx context.Context, statuses []Status, sc *scratch, domain string) (denied bool, err error) {
	// idx: each status's first limit in the policy, -1 for none.
	sc.pp, sc.kk, sc.idx = sc.pp[:0], sc.kk[:0], sc.idx[:0]
	for range statuses {
		sc.idx = append(sc.idx, -1)
	}
	var shape policyShape
	cost, peek := int64(-1), false
	least := int64(math.MaxInt64)
	// The quota descriptors that may let the request through: the bits
	// of their limits in the policy.
	var quotas [ratekit.MaxPolicyLimits]uint16
	nq, hasQuota, quotaAlwaysOK := 0, false, false
	for i := range statuses {
		if s := &statuses[i]; s.Checked {
			if cost >= 0 && s.Hits != cost {
				return false, fmt.Errorf("%w: with Options.Atomic every descriptor of a request has one cost: descriptor %d's is %d, another's %d", ErrRequest, i, s.Hits, cost)
			}
			cost = s.Hits
		}
	}
	// The policy's limits, then (pass 1) those of the descriptors that
	// cannot deny the request whose cost is above a limit of theirs: over
	// it, they count nothing, and are only asked what they hold (a
	// policy's cost is at most its least limit).
	main := 0
	for pass := range 2 {
		if pass == 1 {
			main = len(sc.pp)
		}
		for i := range statuses {
			s := &statuses[i]
			if !s.Checked {
				continue
			}
			quota := r.quota(s)
			shadowRule := s.Rule != nil && s.Rule.ShadowMode
			enforced := !quota && !shadowRule
			ps := r.paramsOf(s, sc, i)
			above := false
			for _, p := range ps {
				above = above || cost > p.Limit()
			}
			if pass == 0 {
				hasQuota = hasQuota || quota
				// A shadow_mode quota descriptor is never over: the request
				// is never denied by its quota descriptors.
				quotaAlwaysOK = quotaAlwaysOK || (quota && shadowRule)
				if ps == nil { // requests_per_unit 0
					r.zero(s)
					peek = peek || enforced
					continue
				}
			}
			if ps == nil || (pass == 1) != (above && !enforced) {
				continue
			}
			// A descriptor given twice is one counter: counted once.
			if j := slices.Index(sc.kk, sc.keys[i]); j >= 0 {
				if !slices.Equal(sc.pp[j:min(j+len(ps), len(sc.pp))], ps) || (shape.shadow&(1<<j) == 0) != enforced {
					return false, fmt.Errorf("%w: with Options.Atomic descriptor %d and another count at one key under different limits", ErrRequest, i)
				}
				sc.idx[i] = j
				continue
			}
			sc.idx[i] = len(sc.pp)
			var bits uint16
			for j, p := range ps {
				n := len(sc.pp)
				if n == ratekit.MaxPolicyLimits {
					return false, fmt.Errorf("%w: with Options.Atomic a request checks at most %d limits", ErrRequest, ratekit.MaxPolicyLimits)
				}
				shape.algs[n] = r.algIndex[p.Algorithm()]*maxRuleLimits + uint8(j)
				if !enforced {
					shape.shadow |= 1 << n
				} else {
					least = min(least, p.Limit())
				}
				bits |= 1 << n
				shape.n++
				sc.pp = append(sc.pp, p)
				sc.kk = append(sc.kk, sc.keys[i])
			}
			if quota && !shadowRule && !above {
				quotas[nq] = bits
				nq++
			}
		}
	}
	if len(sc.pp) == 0 {
		return false, nil
	}
	// A cost of 0 asks; a cost above an enforced limit, a limit of 0, or
	// quota descriptors that are all over deny the request: nothing
	// counts, and each limit says what it holds.
	if hasQuota && !quotaAlwaysOK && nq == 0 {
		peek = true
	}
	peek = peek || cost == 0 || cost > least
	// The descriptors set aside, asked what they hold.
	var aside core.Decision
	if n := len(sc.pp) - main; n > 0 {
		var as policyShape
		as.n, as.shadow = uint8(n), 1<<n-1
		copy(as.algs[:], shape.algs[main:])
		lim, err := r.policies.get(r, as)
		if err != nil {
			return false, err
		}
		req := core.Request{Key: domain, N: 1, Op: core.OpPeek, Params: sc.pp[main:], Keys: sc.kk[main:]}
		if aside, err = lim.Decide(ctx, req); err != nil {
			return false, err
		}
		if len(aside.Limits) != n {
			return false, fmt.Errorf("%w: a policy of %d limits answered %d", core.ErrInvalidConfig, n, len(aside.Limits))
		}
	}
	var d core.Decision
	if main > 0 {
		shape.n = uint8(main)
		clear(shape.algs[main:])
		shape.shadow &= 1<<main - 1
		base, attempts := shape.shadow, 1
		enforceQuota := hasQuota && !quotaAlwaysOK && !peek
		if enforceQuota {
			attempts = nq
		}
		for a := range attempts {
			if enforceQuota {
				shape.shadow = base &^ quotas[a]
			}
			lim, err := r.policies.get(r, shape)
			if err != nil {
				return false, err
			}
			req := core.Request{Key: domain, N: cost, Params: sc.pp[:main], Keys: sc.kk[:main]}
			if peek {
				req.N, req.Op = 1, core.OpPeek
			}
			if d, err = lim.Decide(ctx, req); err != nil {
				return false, err
			}
			if len(d.Limits) != main {
				return false, fmt.Errorf("%w: a policy of %d limits answered %d", core.ErrInvalidConfig, main, len(d.Limits))
			}
			if d.Allowed {
				break
			}
			// Denied: by an enforced limit (the verdict), or by the quota
			// descriptor enforced this time (try the next).
			byEnforced := false
			for j := range d.Limits {
				if base&(1<<j) == 0 && !d.Limits[j].Allowed {
					byEnforced = true
				}
			}
			if byEnforced {
				break
			}
		}
	} else {
		// Only descriptors set aside: nothing is counted.
		peek = true
	}
	for i, start := range sc.idx {
		if start < 0 {
			continue
		}
		s := &statuses[i]
		ps := r.paramsOf(s, sc, i)
		var lds []core.LimitDecision
		if start < main {
			lds = d.Limits[start : start+len(ps)]
		} else {
			lds = aside.Limits[start-main : start-main+len(ps)]
		}
		// The limit that binds this descriptor: a denial's longest wait,
		// or the least left.
		b, over := 0, false
		for j, ld := range lds {
			denied := !ld.Allowed || cost > ps[j].Limit()
			switch {
			case denied && (!over || ld.RetryAfter > lds[b].RetryAfter):
				b, over = j, true
			case !denied && !over && ld.Remaining < lds[b].Remaining:
				b = j
			}
		}
		ld := lds[b]
		s.Decision = ld.Decision
		s.Remaining = uint32(min(max(ld.Remaining, 0), math.MaxUint32))
		s.ResetAfter = ld.ResetAfter
		if len(ps) > 1 {
			s.bind(b)
		}
		if over {
			s.Code, s.Decision.Allowed = OverLimit, false
			s.ResetAfter = max(s.ResetAfter, ld.RetryAfter)
		}
		r.shadow(s)
	}
	return !peek && !d.Allowed, nil
}

// paramsOf returns the parameters a checked status decides with: its
// rule's limits, or the request's own; nil for 0 requests per unit.
func (r *Rules) paramsOf(s *Status, sc *scratch, i int) []core.Params {
	if s.Override {
		if sc.params[i] == nil {
			return nil
		}
		return sc.params[i : i+1]
	}
	return s.Rule.params
}

// policyShape is what a keyed policy is made of: its limits' limiters
// (an algorithm's index in algorithms.All times maxRuleLimits, plus the
// limit's place in its rule) and which run in shadow.
type policyShape struct {
	n      uint8
	shadow uint16
	algs   [ratekit.MaxPolicyLimits]uint8
}

// policies keeps the keyed policies decideAtomic built, one per shape.
type policies struct {
	mu sync.RWMutex
	m  map[policyShape]core.Limiter
}

// maxPolicies bounds how many policies are kept.
const maxPolicies = 1024

func (c *policies) get(r *Rules, shape policyShape) (core.Limiter, error) {
	c.mu.RLock()
	l, ok := c.m[shape]
	c.mu.RUnlock()
	if ok {
		return l, nil
	}
	limits := make([]ratekit.Limit, shape.n)
	for i := range limits {
		code := shape.algs[i]
		lim, err := r.limiterAt(r.algNames[code/maxRuleLimits], int(code%maxRuleLimits), false)
		if err != nil {
			return nil, err
		}
		limits[i] = ratekit.Limit{Name: fmt.Sprintf("d%d", i), Limiter: lim, Shadow: shape.shadow&(1<<i) != 0}
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Keyed: true, Limits: limits})
	if err != nil {
		return nil, err
	}
	if l, err = r.wrap(p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[policyShape]core.Limiter{}
	}
	if len(c.m) < maxPolicies {
		c.m[shape] = l
	}
	c.mu.Unlock()
	return l, nil
}
