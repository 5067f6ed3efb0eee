package goredisstore_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/benchutil"
	"github.com/ratekit/ratekit/testkit/redistest"
)

func BenchmarkTokenBucket(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
	defer rdb.Close()
	benchutil.TokenBucket(b, newStore(b, rdb))
}

// BenchmarkCluster measures Allow on a token bucket that never denies,
// through a *redis.ClusterClient on a local three-master cluster: one
// goroutine, 64 goroutines (whose calls the store pipelines), and one
// AllowMany of 100 keys (one pipeline, split by node). ns/op is per
// decision, per batch for batch100:
//
//	go test -run '^$' -bench Cluster -count 6 ./store/goredis/
func BenchmarkCluster(b *testing.B) {
	c := redistest.SharedCluster(b)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, PoolSize: 64})
	defer rdb.Close()
	lim, err := tokenbucket.New(newStore(b, rdb), tokenbucket.Config{
		Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second,
		Prefix: "bench:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":",
	})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchutil.UserKeys(benchutil.Keys)
	ctx := context.Background()
	allow := func(b *testing.B, key string) bool {
		if d, err := lim.Allow(ctx, key); err != nil || !d.Allowed {
			b.Errorf("%+v, %v", d, err)
			return false
		}
		return true
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if !allow(b, keys[i%len(keys)]) {
				return
			}
		}
	})
	b.Run("g64", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(7919))
			for pb.Next() {
				i++
				if !allow(b, keys[i%len(keys)]) {
					return
				}
			}
		})
	})
	b.Run("batch100", func(b *testing.B) {
		b.ReportAllocs()
		reqs := make([]core.Request, 100)
		for i := 0; b.Loop(); i++ {
			for j := range reqs {
				reqs[j] = core.Request{Key: keys[(i*100+j)%len(keys)], N: 1}
			}
			for _, r := range lim.AllowMany(ctx, reqs) {
				if r.Err != nil || !r.Decision.Allowed {
					b.Fatalf("%+v, %v", r.Decision, r.Err)
				}
			}
		}
	})
}
