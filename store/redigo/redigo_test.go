package redigostore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/adaptertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// store returns a store on a pool of connections to addr, closed when t
// ends.
func store(t *testing.T, addr string, opts ...scriptproto.Option) *scriptproto.Runner {
	t.Helper()
	p := &redis.Pool{MaxIdle: 8, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	t.Cleanup(func() { p.Close() })
	r, err := redigostore.New(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{Runner: store(t, redistest.Start(t).Addr)})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock. On
// a server that can replicate a script verbatim (Redis 5.0-6.2), it does,
// so that a script that writes after TIME must ask for its commands to be
// replicated instead.
func TestConformanceServerClock(t *testing.T) {
	conformance.RunServerClock(t, store(t, redistest.Start(t, redistest.VerbatimScripts(t)...).Addr), 3)
}

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  store(t, srv.Addr),
		Name:    "redigo",
		Dead:    store(t, fmt.Sprintf("127.0.0.1:%d", port)),
		OneNode: true,
		Do: func(_ context.Context, args ...string) (string, error) {
			return redistest.Command(srv.Addr, args...)
		},
	})
}

func TestNewRefusesANilPool(t *testing.T) {
	if r, err := redigostore.New(nil); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "redigo: a nil *redis.Pool") || r != nil {
		t.Errorf("New(nil) = %v, %v; want ErrInvalidConfig", r, err)
	}
}
