package goredisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
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

// Every go-redis client type either works or is refused by New with an
// error wrapping core.ErrInvalidConfig, so that no store New returns
// panics at its first call: a nil one of each type, and the types that
// must not be shared
// between goroutines (Conn, Tx, and a pipeline, whose commands wait for
// an Exec the store never calls) are refused; Client, Ring,
// AutoPipeliner and the UniversalClient NewUniversalClient returns work.
// (ClusterClient works: cluster_test.go.)
func TestNewClientTypes(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	ctx := context.Background()
	conn := c.Conn()
	t.Cleanup(func() { conn.Close() })
	var universal redis.UniversalClient
	type refused struct {
		name string
		c    func() redis.Scripter
		want string
	}
	cases := []refused{
		{"nil", func() redis.Scripter { return nil }, "goredis: a nil client"},
		{"a nil UniversalClient", func() redis.Scripter { return universal }, "goredis: a nil client"},
	}
	for _, c := range []redis.Scripter{
		(*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil), (*redis.AutoPipeliner)(nil),
		(*redis.Conn)(nil), (*redis.Tx)(nil), (*redis.Pipeline)(nil),
	} {
		cases = append(cases, refused{fmt.Sprintf("a nil %T", c), func() redis.Scripter { return c }, fmt.Sprintf("goredis: a nil %T", c)})
	}
	cases = append(cases,
		refused{"a UniversalClient holding a nil *redis.Client", func() redis.Scripter {
			var u redis.UniversalClient = (*redis.Client)(nil)
			return u
		}, "goredis: a nil *redis.Client"},
		refused{"a Conn", func() redis.Scripter { return conn }, "must not be shared"},
		refused{"a Pipeline", func() redis.Scripter { return c.Pipeline() }, "Exec"},
		refused{"a TxPipeline", func() redis.Scripter { return c.TxPipeline() }, "Exec"},
	)
	for _, rc := range cases {
		t.Run(rc.name, func(t *testing.T) {
			r, err := goredisstore.New(rc.c())
			if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), rc.want) || r != nil {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig saying %q", r, err, rc.want)
			}
		})
	}
	// A Tx lives in its Watch function.
	if err := c.Watch(ctx, func(tx *redis.Tx) error {
		r, err := goredisstore.New(tx)
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "must not be shared") || r != nil {
			t.Errorf("New(a Tx) = %v, %v; want ErrInvalidConfig", r, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}, MaxRetries: -1})
	t.Cleanup(func() { ring.Close() })
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ap.Close() })
	universal = redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr}, MaxRetries: -1})
	t.Cleanup(func() { universal.Close() })
	for name, c := range map[string]redis.Scripter{"a Client": c, "a Ring": ring, "an AutoPipeliner": ap, "a UniversalClient": universal} {
		t.Run(name, func(t *testing.T) {
			lim, err := tokenbucket.New(newStore(t, c), tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Hour, Prefix: "types:"})
			if err != nil {
				t.Fatal(err)
			}
			if d, err := lim.Allow(ctx, name); err != nil || !d.Allowed || d.Remaining != 4 {
				t.Fatalf("Allow: %+v, %v", d, err)
			}
		})
	}
}
