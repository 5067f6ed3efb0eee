package goredisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/internal/testkit/benchutil"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
)

func BenchmarkTokenBucket(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
	defer rdb.Close()
	benchutil.TokenBucket(b, goredisstore.New(rdb))
}
