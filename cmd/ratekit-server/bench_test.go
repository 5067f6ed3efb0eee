package main

import (
	"context"
	"testing"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// BenchmarkShouldRateLimit is the server's own cost per decision on the
// memory store, without gRPC: what the protocol layer adds to rules.
func BenchmarkShouldRateLimit(b *testing.B) {
	for _, mix := range []struct {
		name string
		ds   []*commonv3.RateLimitDescriptor
	}{
		{"one", []*commonv3.RateLimitDescriptor{desc("key1", "b")}},
		{"three", []*commonv3.RateLimitDescriptor{desc("key1", "b"), desc("key1_local", "b"), desc("one_per_minute", "b")}},
	} {
		b.Run(mix.name, func(b *testing.B) {
			r := startRLS(b, "memory", nil, map[string]string{"LOG_LEVEL": "error"})
			req := &rlsv3.RateLimitRequest{Domain: "basic", Descriptors: mix.ds, HitsAddend: 1}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.srv.service.ShouldRateLimit(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
