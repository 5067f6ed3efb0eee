package faulttest

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/conformance"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/testkit/benchutil"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// go-redis' AutoPipeliner (go-redis v9.22 and later) as the store's
// client: the path the README recommends for throughput. It is tested here
// rather than in store/goredis, whose own tests run at the oldest go-redis
// that module requires, which has no AutoPipeline.

// Through the AutoPipeliner, which batches concurrent calls. Commands reach
// it through Process, which it batches (its Do would bypass the pipeline).
func TestConformanceAutoPipeline(t *testing.T) {
	srv := redistest.Start(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ap.Close() })
	store, err := goredisstore.New(ap)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Harness{Runner: store})
}

func BenchmarkTokenBucketAutoPipeline(b *testing.B) {
	srv := redistest.Start(b)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
	defer rdb.Close()
	ap, err := rdb.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	defer ap.Close()
	store, err := goredisstore.New(ap)
	if err != nil {
		b.Fatal(err)
	}
	benchutil.TokenBucket(b, store)
}
