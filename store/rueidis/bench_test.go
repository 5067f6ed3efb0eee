package rueidisstore_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/testkit/benchutil"
	"github.com/ratekit/ratekit/testkit/redistest"
)

func BenchmarkTokenBucket(b *testing.B) {
	srv := redistest.Start(b)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchutil.TokenBucket(b, newStore(b, c))
}

// BenchmarkTokenBucketAlwaysPipelining is BenchmarkTokenBucket on a client
// with AlwaysPipelining: every call goes through the connection's
// background goroutines (the package doc says when that is worth it).
func BenchmarkTokenBucketAlwaysPipelining(b *testing.B) {
	srv := redistest.Start(b)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, AlwaysPipelining: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchutil.TokenBucket(b, newStore(b, c))
}
