package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/benchutil"
)

func BenchmarkTokenBucket(b *testing.B) {
	s, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchutil.TokenBucket(b, s)
}

// BenchmarkParams decides on the open token bucket in process, from one
// goroutine, on benchutil.Keys known keys visited in a scattered order
// (as BenchmarkAlgorithms): "own" with the limiter's own limit (Allow),
// "given" with each request giving the same limit (core.Request.Params,
// made once, as a customer's contract loaded from a database would be).
// Both decide on the same keys, in the same order, so that under
// callgrind the two loops' inclusive costs differ only by what giving a
// limit with a request costs (docs/design.md, "What a decision costs in
// process").
func BenchmarkParams(b *testing.B) {
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfg := tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second}
	p, err := tokenbucket.NewParams(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ps := []core.Params{p}
	cfg.Prefix = "bench:params:"
	l, err := tokenbucket.New(s, cfg)
	if err != nil {
		b.Fatal(err)
	}
	keys := benchutil.UserKeys(benchutil.Keys)
	ctx := context.Background()
	for _, k := range keys {
		l.Decide(ctx, core.Request{Key: k, N: 1, Params: ps}) // every key known
	}
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if d, err := l.Allow(ctx, keys[(i*7919)%len(keys)]); err != nil || !d.Allowed {
				b.Fatalf("%+v, %v", d, err)
			}
		}
	})
	b.Run("given", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if d, err := l.Decide(ctx, core.Request{Key: keys[(i*7919)%len(keys)], N: 1, Params: ps}); err != nil || !d.Allowed {
				b.Fatalf("%+v, %v", d, err)
			}
		}
	})
}

// BenchmarkAlgorithms decides on every algorithm of algorithms.All, with
// limits so high that nothing is denied, on benchutil.Keys known keys
// visited in a scattered order, from one goroutine and from GOMAXPROCS:
// in process (the limiter's path on this store) and through the script
// (the store behind scriptsOnly, as a wrapper makes it), side by side.
func BenchmarkAlgorithms(b *testing.B) {
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := benchutil.UserKeys(benchutil.Keys)
	ctx := context.Background()
	for _, a := range algorithms.All {
		p := algorithms.Params{}
		for _, prm := range a.Params {
			switch prm.Kind {
			case algorithms.Duration:
				p[prm.Name] = int64(time.Second)
			case algorithms.Choice:
				p[prm.Name] = prm.Default
			default:
				p[prm.Name] = 1 << 30
			}
		}
		if a.Name == "slidinglog" {
			p["limit"] = 1000 // its log holds one entry per request in the window
		}
		for _, path := range []struct {
			name   string
			runner core.ScriptRunner
		}{{"inprocess", s}, {"script", scriptsOnly{s}}} {
			l, err := a.New(path.runner, p, nil, "bench:"+a.Name+":"+path.name+":")
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				l.Allow(ctx, k)
			}
			b.Run(a.Name+"/"+path.name+"/serial", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := l.Allow(ctx, keys[(i*7919)%len(keys)]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(a.Name+"/"+path.name+"/parallel", func(b *testing.B) {
				b.ReportAllocs()
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					i := int(next.Add(104729))
					for pb.Next() {
						i += 7919
						if _, err := l.Allow(ctx, keys[i%len(keys)]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
