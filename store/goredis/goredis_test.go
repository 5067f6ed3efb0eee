package goredisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/internal/testkit/adaptertest"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
)

func TestAdapter(t *testing.T) {
	runAdapter(t, func(c *redis.Client) redis.Scripter { return c }, true)
}

// scripterOnly is a redis.Scripter and nothing else: no Process, no
// Pipeline. The Runner then calls EvalSha and its kin, one by one.
type scripterOnly struct{ redis.Scripter }

func TestAdapterScripterOnly(t *testing.T) {
	runAdapter(t, func(c *redis.Client) redis.Scripter { return scripterOnly{c} }, false)
}

// runAdapter runs the adapter kit on clients made by wrap; oneNode says
// whether the Runner can tell that they are one node (a *redis.Client).
func runAdapter(t *testing.T, wrap func(*redis.Client) redis.Scripter, oneNode bool) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { dead.Close() })
	t.Run("KeyLending", func(t *testing.T) { adaptertest.KeyLending(t, goredisstore.New(wrap(c)), true) })
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  goredisstore.New(wrap(c)),
		Dead:    goredisstore.New(wrap(dead)),
		OneNode: oneNode,
		Do: func(ctx context.Context, args ...string) (string, error) {
			a := make([]any, len(args))
			for i := range args {
				a[i] = args[i]
			}
			v, err := c.Do(ctx, a...).Result()
			if err == redis.Nil {
				return "", nil
			}
			return fmt.Sprint(v), err
		},
	})
}

func TestUnusable(t *testing.T) {
	adaptertest.Unusable(t, goredisstore.New(nil), "nil client")
	adaptertest.Unusable(t, goredisstore.New((*redis.Client)(nil)), "nil *redis.Client")
	adaptertest.Unusable(t, goredisstore.New((*redis.ClusterClient)(nil)), "nil *redis.ClusterClient")
	adaptertest.Unusable(t, &goredisstore.Runner{}, "zero Runner")
	adaptertest.Unusable(t, (*goredisstore.Runner)(nil), "nil Runner")
}
