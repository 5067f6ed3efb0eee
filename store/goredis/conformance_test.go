package goredisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
)

// newClient returns a go-redis client for addr, closed when t ends.
func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Against a real redis-server, client-clock mode.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Harness{Runner: goredisstore.New(newClient(t, srv.Addr))})
}

// A Ring (here of one shard) is a client like any other.
func TestConformanceRing(t *testing.T) {
	srv := redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": srv.Addr}, MaxRetries: -1})
	t.Cleanup(func() { ring.Close() })
	conformance.Run(t, conformance.Harness{Runner: goredisstore.New(ring)})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock.
func TestConformanceServerClock(t *testing.T) {
	srv := redistest.Start(t)
	conformance.RunServerClock(t, goredisstore.New(newClient(t, srv.Addr)), 3)
}
