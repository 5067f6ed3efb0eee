package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// A decision on a key the store already holds allocates nothing: the
// limiter lends the store its key and argument buffers (see CopiesKeysOf)
// and the twin appends to the caller's reply buffer.
func TestDecisionsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newStore(t, memory.WithSweepInterval(0))
	tb, _ := tokenbucket.New(s, tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second})
	g, _ := gcra.New(s, gcra.Config{Rate: 1 << 20, Period: time.Second, Burst: 1 << 20})
	ctx := context.Background()
	for name, l := range map[string]core.Limiter{"tokenbucket": tb, "gcra": g} {
		for _, k := range []string{"user:1", "we{ird}"} {
			l.Allow(ctx, k)
			if n := testing.AllocsPerRun(1000, func() { l.Allow(ctx, k) }); n != 0 {
				t.Errorf("%s: Allow(%q) allocates %v times per call", name, k, n)
			}
		}
	}
}
