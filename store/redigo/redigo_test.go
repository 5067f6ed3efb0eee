package redigostore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/internal/testkit/adaptertest"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	redigostore "github.com/ratekit/ratekit/store/redigo"
)

func pool(t *testing.T, addr string) *redis.Pool {
	p := &redis.Pool{MaxIdle: 8, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Harness{Runner: redigostore.New(pool(t, srv.Addr))})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock.
func TestConformanceServerClock(t *testing.T) {
	srv := redistest.Start(t)
	conformance.RunServerClock(t, redigostore.New(pool(t, srv.Addr)), 3)
}

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	p := pool(t, srv.Addr)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// redigo may still be writing a command after its call's context ends:
	// the Runner copies no keys, and is not lent any.
	t.Run("KeyLending", func(t *testing.T) { adaptertest.KeyLending(t, redigostore.New(p), false) })
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  redigostore.New(p),
		Dead:    redigostore.New(pool(t, fmt.Sprintf("127.0.0.1:%d", port))),
		OneNode: true,
		Do: func(ctx context.Context, args ...string) (string, error) {
			c, err := p.GetContext(ctx)
			if err != nil {
				return "", err
			}
			defer c.Close()
			a := make([]any, len(args)-1)
			for i := range a {
				a[i] = args[i+1]
			}
			v, err := redis.DoContext(c, ctx, args[0], a...)
			switch v := v.(type) {
			case nil:
				return "", err
			case []byte:
				return string(v), err
			default:
				return fmt.Sprint(v), err
			}
		},
	})
}

func TestUnusable(t *testing.T) {
	adaptertest.Unusable(t, redigostore.New(nil), "nil *redis.Pool")
	adaptertest.Unusable(t, &redigostore.Runner{}, "zero Runner")
	adaptertest.Unusable(t, (*redigostore.Runner)(nil), "nil Runner")
}
