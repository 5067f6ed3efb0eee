package hotkey_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/hotkey"
	"github.com/ratekit/ratekit/store/memory"
)

// BenchmarkAllow: one process's local decisions on one key, from every
// core (RunParallel), on the memory store; leases are large, so this is
// the cost of the local path: one atomic operation, no allocation.
func BenchmarkAllow(b *testing.B) {
	store, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	lim, err := gcra.New(store, gcra.Config{Rate: 1 << 30, Period: time.Second, Burst: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	budget, err := hotkey.New(lim, hotkey.Config{Lease: 1 << 16, TTL: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, err := budget.Allow(ctx, "hot"); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if d, err := budget.Allow(ctx, "hot"); err != nil || !d.Allowed {
					b.Error(d, err)
					return
				}
			}
		})
	})
}
