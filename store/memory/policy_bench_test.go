package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/benchutil"
)

// BenchmarkPolicy decides in process, from one goroutine, on
// benchutil.Keys known keys visited in a scattered order: "single" with
// an open token bucket, "policy" with a policy of that token bucket and
// an open fixed window (ratekit.NewPolicy), as make bench's policy rows.
func BenchmarkPolicy(b *testing.B) {
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tb, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second, Prefix: "bench:tb:"})
	if err != nil {
		b.Fatal(err)
	}
	fw, err := fixedwindow.New(s, fixedwindow.Config{Limit: 1 << 40, Window: time.Hour, Prefix: "bench:fw:"})
	if err != nil {
		b.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: tb}, {Name: "hour", Limiter: fw}}})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchutil.UserKeys(benchutil.Keys)
	ctx := context.Background()
	for _, k := range keys {
		p.Allow(ctx, k) // every key known to both limits
	}
	for _, c := range []struct {
		name string
		l    *ratekit.Limiter
	}{{"single", tb}, {"policy", p}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if d, err := c.l.Allow(ctx, keys[(i*7919)%len(keys)]); err != nil || !d.Allowed {
					b.Fatalf("%+v, %v", d, err)
				}
			}
		})
	}
}
