package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// An algorithm is one entry of algorithms.All, as the suite checks it.
type algorithm struct {
	name string
	reg  registry.Algorithm
	// spec is the algorithm's declaration, read from a limiter of its
	// defaults (nil when the registry could not build one): the suite
	// checks an algorithm only when it declares a Bound.
	spec *engine.Spec
}

// suite is every algorithm of algorithms.All, in its order.
var suite = func() []algorithm {
	var list []algorithm
	for _, a := range registry.All {
		s := algorithm{name: a.Name, reg: a}
		if l, err := a.New(probe{}, a.Defaults(), nil, ""); err == nil {
			s.spec = engine.Of(l).Limits()[0].Spec
		}
		list = append(list, s)
	}
	return list
}()

// drawable is the algorithms of suite that the suite can check.
var drawable = func() []algorithm {
	var list []algorithm
	for _, a := range suite {
		if a.unchecked() == "" {
			list = append(list, a)
		}
	}
	return list
}()

// unchecked says why the suite cannot check a, "" when it can: an
// algorithm of the registry whose limiters do not build or declare no
// bound must not pass unchecked.
func (a algorithm) unchecked() string {
	switch {
	case a.spec == nil:
		_, err := a.reg.New(probe{}, a.reg.Defaults(), nil, "")
		return fmt.Sprintf("its defaults build no limiter (%v)", err)
	case a.spec.Bound == nil:
		return "its engine.Spec declares no Bound: declare the guarantee the suite checks in its folder"
	}
	return ""
}

// noBound fails a subtest named after a, and reports true, when the suite
// cannot check a (see unchecked).
func noBound(t *testing.T, a algorithm) bool {
	why := a.unchecked()
	if why == "" {
		return false
	}
	t.Run(a.name, func(t *testing.T) {
		t.Fatalf("conformance: algorithm %q (algorithms.All) cannot be checked: %s", a.name, why)
	})
	return true
}

// drawnPeriods are the durations the suite configures algorithms with:
// the default periods and a day.
var drawnPeriods = append(slices.Clone(defaultPeriods), 24*time.Hour)

// draw draws a configuration of a from the registry's parameters: the
// limit a count in 1..20; every other count in 1..10, or up to the limit
// + 2 when that is more (a rate may exceed a capacity); every duration
// one of periods (nil: drawnPeriods); every choice any of its values.
func (a algorithm) draw(t *rapid.T, periods []time.Duration) variant {
	if periods == nil {
		periods = drawnPeriods
	}
	p := registry.Params{}
	lim := a.reg.Limit()
	p[lim.Name] = rapid.Int64Range(1, 20).Draw(t, lim.Name)
	for _, prm := range a.reg.Params {
		switch {
		case prm.Limit:
		case prm.Kind == registry.Count:
			p[prm.Name] = rapid.Int64Range(1, max(10, p[lim.Name]+2)).Draw(t, prm.Name)
		case prm.Kind == registry.Duration:
			p[prm.Name] = int64(rapid.SampledFrom(periods).Draw(t, prm.Name))
		case prm.Kind == registry.Choice:
			p[prm.Name] = rapid.Int64Range(0, int64(len(prm.Choices()))-1).Draw(t, prm.Name)
		default:
			t.Fatalf("conformance: %s: no rule to draw parameter %s of kind %v", a.name, prm.Name, prm.Kind)
		}
	}
	return a.variant(t, p)
}

// variant returns the configuration p of a, as the suite checks it.
func (a algorithm) variant(t *rapid.T, p registry.Params) variant {
	var desc strings.Builder
	desc.WriteString(a.name)
	var period time.Duration
	for _, prm := range a.reg.Params {
		switch prm.Kind {
		case registry.Duration:
			d := time.Duration(p[prm.Name])
			fmt.Fprintf(&desc, " %s=%v", prm.Name, d)
			if period == 0 || d < period {
				period = d
			}
		case registry.Choice:
			fmt.Fprintf(&desc, " %s=%s", prm.Name, prm.Choices()[p[prm.Name]])
		default:
			fmt.Fprintf(&desc, " %s=%d", prm.Name, p[prm.Name])
		}
	}
	built, err := a.reg.New(probe{}, p, nil, "")
	if err != nil {
		t.Fatalf("conformance: %s: %v", desc.String(), err)
	}
	// What the suite checks, the limiter declares (engine.Spec): its
	// bound, its longest wait, its state's size, AllowAtMost.
	l := engine.Of(built).Limits()[0]
	spec := l.Spec
	if period == 0 {
		period = l.Window
	}
	wait := l.Window
	if spec.MaxWait != nil {
		wait = spec.MaxWait(l.Params, l.Window)
	}
	bound, loose := spec.Bound, spec.LooseBound
	if loose == nil {
		loose = bound
	}
	tag := a.name + ":"
	return variant{
		tag:    tag,
		desc:   desc.String(),
		params: p,
		build: func(r core.ScriptRunner, prefix string, clock core.Clock) (*ratekit.Limiter, error) {
			return a.reg.New(r, p, clock, prefix+tag)
		},
		maxCost:     l.Max,
		window:      l.Window,
		atMost:      spec.AtMost,
		stateLen:    spec.StateLen,
		oldStateLen: spec.OldStateLen,
		period:      period,
		wait:        wait,
		bound:       func(h []engine.Event) error { return bound(l.Params, h) },
		looseBound:  func(h []engine.Event) error { return loose(l.Params, h) },
	}
}

// probe is a store that runs nothing: the suite builds limiters on it
// only to read their configuration (a limiter's New sends nothing).
type probe struct{}

func (probe) RunScript(context.Context, *core.Script, []string, []int64, []int64) ([]int64, error) {
	return nil, errors.New("conformance: the probe store runs no script")
}
