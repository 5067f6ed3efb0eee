package goredisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/internal/testkit/clustertest"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
)

// TestCluster runs the conformance suite on a real local Redis Cluster
// through *redis.ClusterClient, 64 goroutines pipelining, then the
// cluster checks (which end with a failover).
func TestCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, MaxRedirects: 8})
	t.Cleanup(func() { rdb.Close() })
	r := goredisstore.New(rdb)
	t.Run("OneAddress", func(t *testing.T) {
		one := redis.NewClient(&redis.Options{Addr: c.Masters[0].Addr, MaxRetries: -1})
		t.Cleanup(func() { one.Close() })
		clustertest.OneAddress(t, c, goredisstore.New(one))
	})
	t.Run("Conformance", func(t *testing.T) { conformance.Run(t, conformance.Harness{Runner: r}) })
	t.Run("Pipelining", func(t *testing.T) {
		// go-redis splits each pipeline by node.
		own := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, MaxRedirects: 8, PoolSize: 64})
		t.Cleanup(func() { own.Close() })
		pipelineExact(t, own)
	})
	clustertest.Run(t, c, r)
}
