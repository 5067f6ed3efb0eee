// Package benchutil holds the shared body of the per-store benchmarks, so
// that every store is measured on the same workload.
//
// It is one of ratekit's own test kits (testkit/): importable, so that
// the stores' modules can use it, with no promise of compatibility.
package benchutil

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
)

// Keys is the number of distinct keys the benchmarks spread requests over.
const Keys = 10000

// UserKeys returns n user keys, "user:0" to "user:<n-1>": the keys the
// benchmarks decide on (n = Keys, unless a benchmark says otherwise).
func UserKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// TokenBucket benchmarks Allow on a token bucket so large that nothing is
// denied: the cost of a decision. It runs serial and parallel sub-benchmarks
// with -benchmem style allocation reports.
func TokenBucket(b *testing.B, runner core.ScriptRunner) {
	lim, err := tokenbucket.New(runner, tokenbucket.Config{
		Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second,
		Prefix: "bench:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":",
	})
	if err != nil {
		b.Fatal(err)
	}
	keys := UserKeys(Keys)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if d, err := lim.Allow(ctx, keys[i%Keys]); err != nil || !d.Allowed {
				b.Fatalf("%+v, %v", d, err)
			}
		}
	})
	b.Run("batch100", func(b *testing.B) {
		// One AllowMany of 100 keys per iteration: one pipelined round
		// trip on the Redis stores. ns/op is per batch.
		b.ReportAllocs()
		reqs := make([]core.Request, 100)
		for i := 0; b.Loop(); i++ {
			for j := range reqs {
				reqs[j] = core.Request{Key: keys[(i*100+j)%Keys], N: 1}
			}
			for _, r := range lim.AllowMany(ctx, reqs) {
				if r.Err != nil || !r.Decision.Allowed {
					b.Fatalf("%+v, %v", r.Decision, r.Err)
				}
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(7919))
			for pb.Next() {
				i++
				if d, err := lim.Allow(ctx, keys[i%Keys]); err != nil || !d.Allowed {
					b.Errorf("%+v, %v", d, err)
					return
				}
			}
		})
	})
}
