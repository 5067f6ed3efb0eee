package faulttest

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/rules"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/testkit/redistest"
	"github.com/redis/rueidis"
)

// BenchmarkRulesDecide puts one descriptor through package rules beside
// the bare limiter's decision with the same parameters at the same key,
// on rueidis against a real redis-server: the cost of matching on top of
// a decision on Redis (issue 31 asks for at most 10%).
func BenchmarkRulesDecide(b *testing.B) {
	srv := redistest.Start(b)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	store, err := rueidisstore.New(c)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := rules.Parse([]rules.File{{Name: "bench.yaml", Data: []byte(`
domain: bench
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`)}}, rules.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := rules.New(store, cfg, rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bare, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Second, Prefix: rules.DefaultPrefix + "fixedwindow:"})
	if err != nil {
		b.Fatal(err)
	}
	ds := []rules.Descriptor{{Entries: []rules.Entry{{Key: "remote_address", Value: "192.0.2.7"}}}}
	rule, _ := cfg.Match("bench", ds[0].Entries)
	ctx := context.Background()
	req := core.Request{Key: "bench_remote_address_192.0.2.7", N: 1, Params: []core.Params{rule.Limits[0].Params}}
	for range 3 { // interleaved rounds: the machine's load shifts
		b.Run("bare", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bare.Decide(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("rules", func(b *testing.B) {
			b.ReportAllocs()
			var res rules.Result
			for b.Loop() {
				if err := r.DecideTo(ctx, &res, "bench", ds, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
