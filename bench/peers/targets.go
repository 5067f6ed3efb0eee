package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	throttledstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/ulule/limiter/v3"
	ulule "github.com/ulule/limiter/v3/drivers/store/redis"
	"golang.org/x/time/rate"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/rules"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/memory"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
)

// decideFunc makes one decision for key and reports whether it was allowed.
type decideFunc func(ctx context.Context, key string) (bool, error)

var storeNames = []string{"memory", "goredis", "goredis-auto", "rueidis", "redigo", "valkey"}

// openStore returns a ratekit store over a fresh client for t (nil: the
// memory store needs none).
func openStore(name string, t *target) (core.ScriptRunner, func(), error) {
	switch name {
	case "memory":
		s, err := memory.New()
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	case "goredis":
		c := t.goredis(-1)
		s, err := goredisstore.New(c)
		return opened(s, err, func() { c.Close() })
	case "goredis-auto":
		c := t.goredis(-1)
		var ap *goredis.AutoPipeliner
		var err error
		switch c := c.(type) {
		case *goredis.Client:
			ap, err = c.AutoPipeline()
		case *goredis.ClusterClient:
			ap, err = c.AutoPipeline()
		}
		if err != nil || ap == nil {
			c.Close()
			return nil, nil, fmt.Errorf("AutoPipeline: %v", err)
		}
		s, err := goredisstore.New(ap)
		return opened(s, err, func() { ap.Close(); c.Close() })
	case "rueidis":
		c, err := t.rueidis()
		if err != nil {
			return nil, nil, err
		}
		s, err := rueidisstore.New(c)
		return opened(s, err, c.Close)
	case "redigo":
		p, err := t.redigo()
		if err != nil {
			return nil, nil, err
		}
		s, err := redigostore.New(p)
		return opened(s, err, func() { p.Close() })
	case "valkey":
		c, err := t.valkey()
		if err != nil {
			return nil, nil, err
		}
		s, err := valkeystore.New(c)
		return opened(s, err, c.Close)
	}
	return nil, nil, fmt.Errorf("unknown store %q", name)
}

// opened returns a Redis store and the function that closes its client,
// or closes the client at once when the store's New failed.
func opened(s *scriptproto.Runner, err error, closeFn func()) (core.ScriptRunner, func(), error) {
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return s, closeFn, nil
}

// algo builds a limiter that never denies (open) and one that denies
// everything after a key's first request (tight). The ceiling takes the
// open limiter's script and arguments from its engine's Call
// (ceilings.go).
type algo struct {
	name  string
	open  func(core.ScriptRunner, string) (core.Limiter, error)
	tight func(core.ScriptRunner, string) (core.Limiter, error)
}

// big is the open limiters' counts, and the peers': far more than a key
// is asked for in a run.
const big = int64(1) << 30

// openParams returns a's parameters for a limit so high that nothing is
// denied: every duration a second, every choice its default, every count
// big or, when a's New
// refuses that (the sliding log keeps an entry per unit and takes at most
// slidinglog.MaxLimit), the largest count it takes, found by bisection on
// New with runner. Only the registry's kinds are needed, no entry per
// algorithm; TestAlgos checks that the limiter never denies.
func openParams(a algorithms.Algorithm, runner core.ScriptRunner) (algorithms.Params, error) {
	with := func(count int64) algorithms.Params {
		p := algorithms.Params{}
		for _, prm := range a.Params {
			switch prm.Kind {
			case algorithms.Duration:
				p[prm.Name] = int64(time.Second)
			case algorithms.Choice:
				p[prm.Name] = prm.Default
			default:
				p[prm.Name] = count
			}
		}
		return p
	}
	takes := func(count int64) error {
		_, err := a.New(runner, with(count), nil, "bench:probe:")
		return err
	}
	if takes(big) == nil {
		return with(big), nil
	}
	if err := takes(1); err != nil {
		return nil, fmt.Errorf("bench: %s: no open configuration (every duration a second) is accepted: %w", a.Name, err)
	}
	lo, hi := int64(1), big // New takes lo, refuses hi
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if takes(mid) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	return with(lo), nil
}

// tightParams are a's parameters for a limiter that allows a key's first
// request and nothing after it within the benchmark: every count 1, every
// duration an hour, every choice its default.
func tightParams(a algorithms.Algorithm) algorithms.Params {
	p := algorithms.Params{}
	for _, prm := range a.Params {
		switch prm.Kind {
		case algorithms.Duration:
			p[prm.Name] = int64(time.Hour)
		case algorithms.Choice:
			p[prm.Name] = prm.Default
		default:
			p[prm.Name] = 1
		}
	}
	return p
}

// algos are the algorithms measured: every one of algorithms.All, in its
// order. main sets it from ratekitAlgos.
var algos []algo

// ratekitAlgos returns every algorithm of the registry with its open and
// tight limiters, or an error naming an algorithm for which openParams
// finds no configuration.
func ratekitAlgos() ([]algo, error) {
	store, err := memory.New()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var out []algo
	for _, a := range algorithms.All {
		open, err := openParams(a, store)
		if err != nil {
			return nil, err
		}
		tight := tightParams(a)
		out = append(out, algo{
			name:  a.Name,
			open:  func(r core.ScriptRunner, prefix string) (core.Limiter, error) { return a.New(r, open, nil, prefix) },
			tight: func(r core.ScriptRunner, prefix string) (core.Limiter, error) { return a.New(r, tight, nil, prefix) },
		})
	}
	return out, nil
}

func allowFunc(l core.Limiter) decideFunc {
	return func(ctx context.Context, key string) (bool, error) {
		d, err := l.Allow(ctx, key)
		return d.Allowed, err
	}
}

// policyLimiter returns a policy (ratekit.NewPolicy) of two limits that
// never deny: the open token bucket and a fixed window, in one script per
// decision.
func policyLimiter(runner core.ScriptRunner, prefix string) (*ratekit.Limiter, error) {
	tb, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second, Prefix: prefix + "tb:"})
	if err != nil {
		return nil, err
	}
	fw, err := fixedwindow.New(runner, fixedwindow.Config{Limit: 1 << 40, Window: time.Hour, Prefix: prefix + "fw:"})
	if err != nil {
		return nil, err
	}
	return ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: tb}, {Name: "hour", Limiter: fw}}})
}

// policyFunc decides with policyLimiter's policy.
func policyFunc(runner core.ScriptRunner, prefix string) (decideFunc, error) {
	p, err := policyLimiter(runner, prefix)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string) (bool, error) {
		d, err := p.Allow(ctx, key)
		return d.Allowed, err
	}, nil
}

// paramsFunc decides with the open token bucket l, each request giving
// its own limits (core.Request.Params): another open configuration, made
// once, as a customer's contract loaded from a database would be. Against
// l's own limits, it measures what giving limits with a request costs.
func paramsFunc(l core.Limiter) (decideFunc, error) {
	p, err := tokenbucket.NewParams(tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second})
	if err != nil {
		return nil, err
	}
	ps := []core.Params{p}
	return func(ctx context.Context, key string) (bool, error) {
		d, err := l.Decide(ctx, core.Request{Key: key, N: 1, Params: ps})
		return d.Allowed, err
	}, nil
}

// rulesFunc decides through package rules, each key a descriptor's value
// matched to an open token bucket rule: beside paramsFunc, which decides
// with the same kind of parameters given directly, it measures what
// matching a request to its rule costs.
func rulesFunc(runner core.ScriptRunner, prefix string) (decideFunc, error) {
	cfg, err := rules.Parse([]rules.File{{Name: "bench.yaml", Data: []byte(`domain: bench
descriptors:
  - key: key
    rate_limit: {unit: second, requests_per_unit: 4000000000, algorithm: tokenbucket, burst: 1099511627776}
`)}}, rules.LoadOptions{})
	if err != nil {
		return nil, err
	}
	r, err := rules.New(runner, cfg, rules.Options{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	type call struct {
		res rules.Result
		ds  []rules.Descriptor
	}
	calls := sync.Pool{New: func() any {
		return &call{ds: []rules.Descriptor{{Entries: []rules.Entry{{Key: "key"}}}}}
	}}
	return func(ctx context.Context, key string) (bool, error) {
		c := calls.Get().(*call)
		defer calls.Put(c)
		c.ds[0].Entries[0].Value = key
		err := r.DecideTo(ctx, &c.res, "bench", c.ds, 1)
		return c.res.Allowed, err
	}, nil
}

// batchSize is the number of requests in one AllowMany of the batch case.
const batchSize = 100

// batchFunc decides batchSize random keys with one AllowMany per call. It
// is called from one goroutine.
func batchFunc(l core.Limiter, keys []string, size int) (decideFunc, error) {
	bl, ok := l.(interface {
		AllowMany(context.Context, []core.Request) []core.Result
	})
	if !ok {
		return nil, fmt.Errorf("%T has no AllowMany", l)
	}
	r := rand.New(rand.NewPCG(7, 7))
	reqs := make([]core.Request, size)
	return func(ctx context.Context, _ string) (bool, error) {
		for i := range reqs {
			reqs[i] = core.Request{Key: keys[r.IntN(len(keys))], N: 1}
		}
		all := true
		for _, res := range bl.AllowMany(ctx, reqs) {
			if res.Err != nil {
				return false, res.Err
			}
			all = all && res.Decision.Allowed
		}
		return all, nil
	}, nil
}

// deny90 sends one request in ten (keys ending in 0) to an open limiter and
// the rest to a tight one whose keys are already spent: 90% are denied.
func deny90(ctx context.Context, open, tight core.Limiter, keys []string) (decideFunc, error) {
	for i, k := range keys {
		if i%10 != 0 {
			if _, err := tight.Allow(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	return func(ctx context.Context, key string) (bool, error) {
		l := tight
		if key[len(key)-1] == '0' {
			l = open
		}
		d, err := l.Allow(ctx, key)
		return d.Allowed, err
	}, nil
}

var peerNames = []string{"redis_rate", "ulule", "throttled", "x/time/rate", "sethvargo"}

// inProcessPeers are the peers of peerNames that decide in process, as
// the memory store does.
var inProcessPeers = []string{"x/time/rate", "sethvargo"}

// openPeer returns a peer library's decision for a token-bucket-like limit
// so high nothing is denied, its keys under t's prefix (t is nil for the
// in-process peers).
func openPeer(name string, t *target) (decideFunc, func(), error) {
	newClient := func() goredis.UniversalClient { return t.goredis(3) }
	switch name {
	case "redis_rate":
		c := newClient()
		l := redis_rate.NewLimiter(prefixed{c, t.prefix})
		// A rate its floating-point time can count: at 2^30 per second a
		// request's increment (1 ns) is lost in the rounding of the
		// seconds since 2017 (about 60 ns), and redis_rate then writes
		// no state at all.
		lim := redis_rate.Limit{Rate: 1_000_000, Burst: 1_000_000, Period: time.Second}
		return func(ctx context.Context, key string) (bool, error) {
			r, err := l.Allow(ctx, key, lim)
			if err != nil {
				return false, err
			}
			return r.Allowed > 0, nil
		}, func() { c.Close() }, nil
	case "ulule":
		c := newClient()
		st, err := ulule.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: t.prefix + "ulule", MaxRetry: 1})
		if err != nil {
			return nil, nil, err
		}
		l := limiter.New(st, limiter.Rate{Period: time.Second, Limit: big})
		return func(ctx context.Context, key string) (bool, error) {
			r, err := l.Get(ctx, key)
			return err == nil && !r.Reached, err
		}, func() { c.Close() }, nil
	case "throttled":
		c := newClient()
		st, err := throttledstore.NewCtx(c, t.prefix+"throttled:")
		if err != nil {
			return nil, nil, err
		}
		l, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerSec(1_000_000), MaxBurst: 1 << 20})
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, key string) (bool, error) {
			limited, _, err := l.RateLimitCtx(ctx, key, 1)
			return !limited, err
		}, func() { c.Close() }, nil
	case "x/time/rate":
		var m sync.Map
		return func(_ context.Context, key string) (bool, error) {
			v, ok := m.Load(key)
			if !ok {
				v, _ = m.LoadOrStore(key, rate.NewLimiter(rate.Limit(big), int(big)))
			}
			return v.(*rate.Limiter).Allow(), nil
		}, func() {}, nil
	case "sethvargo":
		st, err := memorystore.New(&memorystore.Config{Tokens: uint64(big), Interval: time.Second})
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, key string) (bool, error) {
			_, _, _, ok, err := st.Take(ctx, key)
			return ok, err
		}, func() { st.Close(context.Background()) }, nil
	}
	return nil, nil, fmt.Errorf("unknown peer %q", name)
}
