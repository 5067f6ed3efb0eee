package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
)

// RunServerClock runs each algorithm against a store that decides on its
// own clock, which the test cannot set: a real redis-server in server-time
// mode (limiters with no Clock, so every script reads TIME). Configurations
// use periods of a few milliseconds and the suite sleeps between requests.
//
// With no clock to share there is no reference to compare with; instead
// the suite reads the store's time just before and just after every call
// (a script that returns TIME), and checks each algorithm's bound with the
// most generous times those readings allow: an allowed request at time t
// lies in [before, after], so the gap between two requests is at most the
// second's after minus the first's before. The fixed window and the
// sliding counter are held to the bounds their package docs give for any
// rolling window (at most 2 x Limit). Every
// decision must also keep Remaining in [0, Limit] and its waits within the
// configuration, and a denied request retried after sleeping its
// RetryAfter must pass.
//
// runs random sequences of steps are run per algorithm; the seed of each
// is logged.
func RunServerClock(t *testing.T, runner core.ScriptRunner, runs int) {
	t.Helper()
	if runner == nil {
		t.Fatal("conformance: runner is nil")
	}
	for _, a := range suite {
		if noBound(t, a) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			for i := 0; i < runs; i++ {
				seed := rand.Uint64()
				t.Logf("run %d: seed %d", i, seed)
				runServerClock(t, runner, a, seed)
			}
		})
	}
	t.Run("concurrency", func(t *testing.T) {
		for i := 0; i < runs; i++ {
			seed := rand.Uint64()
			t.Logf("run %d: seed %d", i, seed)
			runConcurrencyServerClock(t, runner, seed)
		}
	})
}

// serverPeriods are short, so that a run of a few dozen requests takes a
// fraction of a second of sleeping.
var serverPeriods = []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 11*time.Millisecond + 7*time.Microsecond}

var timeScript = core.NewScript("time",
	`local t = redis.call('TIME') return {tonumber(t[1]) * 1000000 + tonumber(t[2])}`,
	func(tx core.Tx, _ []string, _ []int64, reply []int64) ([]int64, error) {
		return append(reply, tx.Now()), nil
	}, true)

// A span is an allowed request whose time is known to lie in [lo, hi].
type span struct{ lo, hi, cost int64 }

func runServerClock(t *testing.T, runner core.ScriptRunner, a algorithm, seed uint64) {
	t.Helper()
	v := rapid.Custom(func(t *rapid.T) variant { return a.draw(t, serverPeriods) }).Example(int(seed % (1 << 30)))
	t.Logf("config: %s", v.desc)
	lim, err := v.build(runner, newPrefix(), nil)
	if err != nil {
		t.Fatalf("%s: %v", v.desc, err)
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	ctx := context.Background()
	serverNow := func() int64 {
		r, err := runner.RunScript(ctx, timeScript, []string{newPrefix() + "time"}, nil, nil)
		if err != nil || len(r) != 1 {
			t.Fatalf("reading the store's time: %v %v", r, err)
		}
		return r[0]
	}
	bound := v.looseBound
	history := map[string][]span{}
	check := func(what, key string, d core.Decision) {
		t.Helper()
		switch {
		case d.Remaining < 0 || d.Remaining > d.Limit:
			t.Fatalf("%s: %s: Remaining %d outside [0, Limit %d]", v.desc, what, d.Remaining, d.Limit)
		case d.RetryAfter > v.wait || d.ResetAfter > v.wait:
			t.Fatalf("%s: %s: RetryAfter %v / ResetAfter %v longer than the configuration allows (%v)", v.desc, what, d.RetryAfter, d.ResetAfter, v.wait)
		case d.Allowed && d.RetryAfter != 0, !d.Allowed && d.RetryAfter <= 0:
			t.Fatalf("%s: %s: Allowed %v with RetryAfter %v", v.desc, what, d.Allowed, d.RetryAfter)
		}
	}
	allow := func(key string, n int64) core.Decision {
		t.Helper()
		lo := serverNow()
		d, err := lim.AllowN(ctx, key, n)
		hi := serverNow()
		what := fmt.Sprintf("AllowN(%q, %d) between %d and %d", key, n, lo, hi)
		if err != nil {
			t.Fatalf("%s: %s: %v", v.desc, what, err)
		}
		check(what, key, d)
		if d.Allowed {
			history[key] = append(history[key], span{lo: lo, hi: hi, cost: n})
			if err := bound(widest(history[key])); err != nil {
				t.Fatalf("%s: key %q: bound violated: %v", v.desc, key, err)
			}
		}
		return d
	}
	keys := []string{"a", "b", "{c}"}
	for step := 0; step < 40; step++ {
		key := keys[rng.IntN(len(keys))]
		n := 1 + rng.Int64N(v.maxCost)
		switch rng.IntN(8) {
		case 0:
			time.Sleep(time.Duration(rng.Int64N(int64(2 * v.period))))
		case 1:
			d, err := lim.Peek(ctx, key)
			if err != nil {
				t.Fatalf("Peek: %v", err)
			}
			check("Peek", key, d)
		case 2:
			// Sleeping RetryAfter gets the same request through, if
			// nothing else was counted (a later time only helps).
			if d := allow(key, n); !d.Allowed {
				time.Sleep(d.RetryAfter)
				if late := allow(key, n); !late.Allowed {
					t.Fatalf("%s: key %q: still denied after sleeping the RetryAfter of %v: %+v", v.desc, key, d.RetryAfter, late)
				}
			}
		default:
			allow(key, n)
		}
	}
}

// widest turns spans into the events that make every gap between the
// newest request and an older one as long as the readings allow: the
// newest at its latest possible time, the others at their earliest.
func widest(h []span) []engine.Event {
	out := make([]engine.Event, len(h))
	for i, s := range h {
		out[i] = engine.Event{At: s.lo, Cost: s.cost}
	}
	out[len(out)-1].At = h[len(h)-1].hi
	return out
}
