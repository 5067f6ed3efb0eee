package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// Params is one limit's parameters given with a request
// (core.Request.Params), as an algorithm package's NewParams builds them
// from its Config: checked as its New checks the Config, so that a
// decision with them checks only that they are for its limit's
// algorithm. It is the engine's core.Params, and a comparable value:
// equal configurations give equal Params.
type Params struct {
	spec   *Spec
	vals   Args // as Limit.Params, then 0s
	max    int64
	window time.Duration
	sched  Schedule
}

var _ core.Params = Params{}

// NewParams returns l, a limit of s, as parameters to give with a
// request: what an algorithm package's NewParams returns for a Config
// from which its New would have built l (err is that building's error,
// returned as is). prefix and clock are that Config's Prefix and Clock:
// they are the limiter's, not a request's, so they must be empty.
func (s *Spec) NewParams(prefix string, clock core.Clock, l Limit, err error) (core.Params, error) {
	switch {
	case prefix != "":
		return nil, fmt.Errorf("%w: %s: Prefix %q: the key prefix is the limiter's, and a limit given with a request takes none", core.ErrInvalidConfig, s.Name, prefix)
	case clock != nil:
		return nil, fmt.Errorf("%w: %s: Clock: the clock is the limiter's, and a limit given with a request takes none", core.ErrInvalidConfig, s.Name)
	case err != nil:
		return nil, err
	case l.Spec != s:
		panic(fmt.Sprintf("engine: %s.NewParams given a limit of %v", s.Name, l.Spec))
	}
	return Params{spec: s, vals: argsOf(l.Params), max: l.Max, window: l.Window, sched: l.Schedule}, nil
}

// Algorithm names the parameters' algorithm.
func (p Params) Algorithm() string {
	if p.spec == nil {
		return ""
	}
	return p.spec.Name
}

// Limit is the Limit of a decision made with p.
func (p Params) Limit() int64 { return p.max }

// Window is the Window of a decision made with p.
func (p Params) Window() time.Duration { return p.window }

// String describes p by its Config fields.
func (p Params) String() string {
	if p.spec == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(p.spec.Name + "{")
	sep := ""
	for i, prm := range p.spec.Params {
		switch prm.Kind {
		case Count:
			fmt.Fprintf(&b, "%s%s: %d", sep, prm.Field, p.vals[i])
		case Micros:
			fmt.Fprintf(&b, "%s%s: %v", sep, prm.Field, time.Duration(p.vals[i])*time.Microsecond)
		case Choice:
			fmt.Fprintf(&b, "%s%s: %s", sep, prm.Field, prm.Choices[p.vals[i]])
		default:
			continue
		}
		sep = ", "
	}
	if p.sched != nil {
		fmt.Fprintf(&b, "%s%v", sep, p.sched)
	}
	b.WriteString("}")
	return b.String()
}

// given checks a request's Params against e's limits: nil, or one entry
// per limit, each nil or built for that limit's algorithm. It returns
// the largest cost the request may have under them.
func (e *Engine) given(ps []core.Params) (maxCost int64, err error) {
	if len(ps) == 0 {
		return e.maxCost, nil
	}
	if len(ps) != len(e.limits) {
		return 0, fmt.Errorf("%w: the request gives %d Params to a limiter of %d limit(s): one per limit, in order", core.ErrInvalidConfig, len(ps), len(e.limits))
	}
	maxCost = params.MaxCount
	for i, gp := range ps {
		l := &e.limits[i]
		if gp == nil {
			maxCost = min(maxCost, l.Max)
			continue
		}
		p, ok := gp.(Params) // AsParams, without copying its result twice
		switch {
		case !ok || p.spec == nil:
			_, err := AsParams(gp)
			return 0, err
		case p.spec != l.Spec:
			return 0, fmt.Errorf("%w: the request gives %s Params to %s, a %s limit", core.ErrInvalidConfig, p.Algorithm(), e.limitName(i), l.Spec.Name)
		case p.sched != nil && e.clock == nil:
			return 0, fmt.Errorf("%w: the request gives %v, whose parameters follow the time, to %s, a limiter without a Clock", core.ErrInvalidConfig, p, e.limitName(i))
		}
		maxCost = min(maxCost, p.max)
	}
	return maxCost, nil
}

// AsParams returns gp as the engine's Params, or an error wrapping
// core.ErrInvalidConfig when no algorithm package's NewParams built it.
func AsParams(gp core.Params) (Params, error) {
	p, ok := gp.(Params)
	if !ok || p.spec == nil {
		return Params{}, fmt.Errorf("%w: Params of type %T: build them with an algorithm package's NewParams", core.ErrInvalidConfig, gp)
	}
	return p, nil
}

// checkKeys checks a request's Keys against e's limits: nil (but for a
// keyed policy), or one entry per limit, each at most core.MaxKeyLen
// bytes, and in a keyed policy different for limits of one prefix.
func (e *Engine) checkKeys(keys []string) error {
	switch {
	case keys == nil && e.keyed:
		return fmt.Errorf("%w: a keyed policy decides only requests that give Keys, one per limit", core.ErrInvalidConfig)
	case keys == nil:
		return nil
	case len(keys) != len(e.limits):
		return fmt.Errorf("%w: the request gives %d Keys to a limiter of %d limit(s): one per limit, in order", core.ErrInvalidConfig, len(keys), len(e.limits))
	case e.penalty != "":
		return fmt.Errorf("%w: a policy with penalties takes no Keys: its penalty block is one per Key", core.ErrInvalidConfig)
	}
	for i, k := range keys {
		if len(k) > core.MaxKeyLen {
			return fmt.Errorf("%w: Keys[%d] is %d bytes, more than %d", core.ErrInvalidKey, i, len(k), core.MaxKeyLen)
		}
		if !e.keyed {
			continue
		}
		for j := range i {
			if keys[j] == k && e.limits[j].Prefix == e.limits[i].Prefix {
				return fmt.Errorf("%w: Keys[%d] and Keys[%d] are one key of limits of one prefix: one counter, counted twice", core.ErrInvalidKey, j, i)
			}
		}
	}
	return nil
}

// limitName names limit i in errors: "limit \"day\"", or "the limiter".
func (e *Engine) limitName(i int) string {
	if e.sh.policy {
		return fmt.Sprintf("limit %q", e.limits[i].Name)
	}
	return "the limiter"
}

// applied returns limit i's Limit and Window for a request that gave ps
// (checked by given).
func (e *Engine) applied(ps []core.Params, i int) (int64, time.Duration) {
	if i < len(ps) && ps[i] != nil {
		p := ps[i].(Params)
		return p.max, p.window
	}
	return e.limits[i].Max, e.limits[i].Window
}
