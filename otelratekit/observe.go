package otelratekit

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// stateful is a limiter with a failure policy: failsafe.Limiter.
type stateful interface {
	State() failsafe.State
}

// hitCounter is a deny cache: denycache.Limiter.
type hitCounter interface {
	Hits() uint64
}

// observed is what a Limiter found behind its wrappers that the meter
// provider reads when it collects, rather than on each decision. A new
// kind of wrapper with a state worth a metric adds a field, a case in add
// and its observation in register.
type observed struct {
	failsafe stateful   // the outermost failsafe limiter, if any
	cache    hitCounter // the outermost deny cache, if any
}

// add notes lim if it is a kind observed and the first of its kind.
func (o *observed) add(lim core.Limiter) {
	if s, ok := lim.(stateful); ok && o.failsafe == nil {
		o.failsafe = s
	}
	if h, ok := lim.(hitCounter); ok && o.cache == nil {
		o.cache = h
	}
}

// failsafeStates are the states ratekit.failsafe.state reports, each as 1
// or 0.
var failsafeStates = []failsafe.State{failsafe.Up, failsafe.Down, failsafe.Probing}

// register registers the callback that observes what o holds for l; nil
// when o holds nothing.
func (o observed) register(t *Telemetry, l *Limiter) (metric.Registration, error) {
	var insts []metric.Observable
	var stateOpts []metric.ObserveOption
	var hitsOpt metric.ObserveOption
	if o.failsafe != nil {
		insts = append(insts, t.failsafeState)
		for _, s := range failsafeStates {
			stateOpts = append(stateOpts, metric.WithAttributeSet(attribute.NewSet(AttrLimiterName.String(l.name), AttrFailsafeState.String(s.String()))))
		}
	}
	if o.cache != nil {
		insts = append(insts, t.denyHits)
		hitsOpt = metric.WithAttributes(l.spanAttrs...)
	}
	if len(insts) == 0 {
		return nil, nil
	}
	return t.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		if o.failsafe != nil {
			now := o.failsafe.State()
			for i, s := range failsafeStates {
				v := int64(0)
				if s == now {
					v = 1
				}
				obs.ObserveInt64(t.failsafeState, v, stateOpts[i])
			}
		}
		if o.cache != nil {
			obs.ObserveInt64(t.denyHits, int64(o.cache.Hits()), hitsOpt)
		}
		return nil
	}, insts...)
}
