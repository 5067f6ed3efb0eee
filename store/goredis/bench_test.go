package goredisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/internal/testkit/benchutil"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
)

func BenchmarkTokenBucket(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
	defer rdb.Close()
	benchutil.TokenBucket(b, newStore(b, rdb))
}
