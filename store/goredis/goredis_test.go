package goredisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/adaptertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// newClient returns a go-redis client for addr, closed when t ends.
func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// newStore returns goredisstore.New(c, opts...), failing t on an error.
func newStore(t testing.TB, c redis.Scripter, opts ...scriptproto.Option) *scriptproto.Runner {
	t.Helper()
	r, err := goredisstore.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

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
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  newStore(t, wrap(c)),
		Name:    "goredis",
		Dead:    newStore(t, wrap(dead)),
		OneNode: oneNode,
		Do: func(_ context.Context, args ...string) (string, error) {
			return redistest.Command(srv.Addr, args...)
		},
	})
}

func TestNewRefusesNilClients(t *testing.T) {
	for want, c := range map[string]redis.Scripter{
		"goredis: a nil client":               nil,
		"goredis: a nil *redis.Client":        (*redis.Client)(nil),
		"goredis: a nil *redis.ClusterClient": (*redis.ClusterClient)(nil),
		"goredis: a nil *redis.Ring":          (*redis.Ring)(nil),
		"goredis: a nil *redis.AutoPipeliner": (*redis.AutoPipeliner)(nil),
	} {
		if r, err := goredisstore.New(c); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), want) || r != nil {
			t.Errorf("New(%T) = %v, %v; want ErrInvalidConfig saying %q", c, r, err, want)
		}
	}
}
