package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
)

// raise returns v's configuration with some parameters raised: a count
// up, a duration down (a refill, a leak or a window comes sooner), each
// drawn or left as it is, choices kept: a limit at least as permissive as
// v's in every parameter. When the algorithm refuses the raised
// configuration (a product of two parameters past what it computes with),
// it keeps v's values.
func (a algorithm) raise(t *rapid.T, v variant) variant {
	p := registry.Params{}
	for _, prm := range a.reg.Params {
		x := v.params[prm.Name]
		switch prm.Kind {
		case registry.Count:
			x += rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(1, 20)).Draw(t, "raise "+prm.Name)
		case registry.Duration:
			shorter := slices.DeleteFunc(slices.Clone(drawnPeriods), func(d time.Duration) bool { return int64(d) > x })
			x = int64(rapid.SampledFrom(append(shorter, time.Duration(x))).Draw(t, "raise "+prm.Name))
		}
		p[prm.Name] = x
	}
	if _, err := a.reg.New(probe{}, p, nil, ""); err != nil {
		return v
	}
	return a.variant(t, p)
}

// runChange checks what a key's state becomes when the limit it is
// decided against changes (ratekit.Carry; each algorithm's package doc,
// "Time and configuration changes"). A limiter built with a configuration
// A decides requests with its own limits or with B's given with the
// request (core.Request.Params), B being A raised in some parameters, in
// an order drawn at random, as processes with old and new limits do
// during a rolling deploy; the reference and the store under test decide
// alike, and after every step, for every cost and every key the step may
// have changed, on both: a request A would allow, B allows too, with at
// least as much Remaining (a raised limit never denies what the old one
// allowed), and so a request B would deny, A denies too (a lowered limit
// never allows what the old one denied).
func runChange(t *rapid.T, h Harness, a algorithm) {
	lo := a.draw(t, nil)
	hi := a.raise(t, lo)
	t.Logf("A: %s; B: %s", lo.desc, hi.desc)
	clock, ref, limClock := reference(t, h)
	defer ref.Close()
	prefix := newPrefix()
	want, err := lo.build(ref, prefix, limClock)
	if err != nil {
		t.Fatalf("%s: %v", lo.desc, err)
	}
	got, err := lo.build(h.Runner, prefix, limClock)
	if err != nil {
		t.Fatalf("%s: %v", lo.desc, err)
	}
	raised, err := a.reg.NewParams(hi.params)
	if err != nil {
		t.Fatalf("%s: NewParams: %v", hi.desc, err)
	}
	limits := map[string][]core.Params{"A": nil, "B": {raised}}
	ctx := context.Background()
	keyGen := rapid.SampledFrom(keys[:3])
	sync := func() {
		if h.SetTime != nil {
			h.SetTime(clock.Now())
		}
	}
	decide := func(t *rapid.T, r core.Request, which string) core.Decision {
		r.Params = limits[which]
		what := fmt.Sprintf("%v(%q, %d) with %s's limits at %d", r.Op, r.Key, r.N, which, clock.Now().UnixMicro())
		dw, ew := want.Decide(ctx, r)
		dg, eg := got.Decide(ctx, r)
		compare(t, what, dw, ew, dg, eg)
		if ew != nil {
			t.Fatalf("%s: %v", what, ew)
		}
		return dw
	}
	// dirty are the keys whose decisions the last step may have changed:
	// a request's key, or every key when time moved. The others hold the
	// state and the time they were checked at, and so their answers.
	dirty := keys[:3]
	t.Repeat(map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			dirty = keys[:3]
			p := int64(lo.period / time.Microsecond)
			clock.Advance(time.Duration(rapid.OneOf(rapid.Int64Range(1, 2000), rapid.Int64Range(0, p), rapid.Int64Range(0, 3*p)).Draw(t, "step")) * time.Microsecond)
		},
		"allow": func(t *rapid.T) {
			sync()
			which := rapid.SampledFrom([]string{"A", "B"}).Draw(t, "limits")
			key := keyGen.Draw(t, "key")
			dirty = []string{key}
			decide(t, core.Request{Key: key, N: rapid.Int64Range(1, lo.maxCost).Draw(t, "n")}, which)
		},
		"refund": func(t *rapid.T) {
			sync()
			which := rapid.SampledFrom([]string{"A", "B"}).Draw(t, "limits")
			key := keyGen.Draw(t, "key")
			dirty = []string{key}
			decide(t, core.Request{Key: key, N: rapid.Int64Range(1, lo.maxCost).Draw(t, "n"), Op: core.OpRefund}, which)
		},
		"": func(t *rapid.T) {
			sync()
			for _, key := range dirty {
				for n := int64(1); n <= min(lo.maxCost, 6); n++ {
					dA := decide(t, core.Request{Key: key, N: n, Op: core.OpPeek}, "A")
					dB := decide(t, core.Request{Key: key, N: n, Op: core.OpPeek}, "B")
					if dA.Allowed && !dB.Allowed || dA.Remaining > dB.Remaining {
						t.Fatalf("key %q, cost %d at %d: A (%s) %+v, but B (%s, raised) %+v", key, n, clock.Now().UnixMicro(), lo.desc, dA, hi.desc, dB)
					}
				}
			}
		},
	})
}
