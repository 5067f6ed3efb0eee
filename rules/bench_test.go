package rules_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// BenchmarkDecide puts one descriptor through Rules beside the bare
// limiter's decision with the same parameters at the same key: the cost
// of matching is the difference.
func BenchmarkDecide(b *testing.B) {
	store, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	cfg, err := rules.Parse([]rules.File{{Name: "bench.yaml", Data: []byte(`
domain: bench
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: path
    value: /api/*
    descriptors:
      - key: method
        rate_limit: {unit: second, requests_per_unit: 1000000000}
`)}}, rules.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := rules.New(store, cfg, rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ds := []rules.Descriptor{{Entries: []rules.Entry{{Key: "remote_address", Value: "192.0.2.7"}}}}
	rule, _ := cfg.Match("bench", ds[0].Entries)
	bare, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Second, Prefix: rules.DefaultPrefix + "fixedwindow:"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		req := core.Request{Key: "bench_remote_address_192.0.2.7", N: 1, Params: []core.Params{rule.Limits[0].Params}}
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
	nested := []rules.Descriptor{{Entries: []rules.Entry{{Key: "path", Value: "/api/users"}, {Key: "method", Value: "GET"}}}}
	b.Run("rules_wildcard_nested", func(b *testing.B) {
		b.ReportAllocs()
		var res rules.Result
		for b.Loop() {
			if err := r.DecideTo(ctx, &res, "bench", nested, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
