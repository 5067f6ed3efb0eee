package valkeystore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/internal/testkit/adaptertest"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
)

func client(t *testing.T, addr string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Harness{Runner: valkeystore.New(client(t, srv.Addr))})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock.
func TestConformanceServerClock(t *testing.T) {
	srv := redistest.Start(t)
	conformance.RunServerClock(t, valkeystore.New(client(t, srv.Addr)), 3)
}

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	doomed := redistest.Start(t)
	dead := client(t, doomed.Addr)
	doomed.Kill()
	t.Run("KeyLending", func(t *testing.T) { adaptertest.KeyLending(t, valkeystore.New(c), true) })
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  valkeystore.New(c),
		Dead:    valkeystore.New(dead),
		OneNode: true,
		Do: func(ctx context.Context, args ...string) (string, error) {
			res := c.Do(ctx, c.B().Arbitrary(args...).Build())
			if valkey.IsValkeyNil(res.Error()) {
				return "", nil
			}
			if n, err := res.AsInt64(); err == nil {
				return fmt.Sprint(n), nil
			}
			return res.ToString()
		},
	})
}

// nilClient is a valkey.Client implementation whose nil pointer is a
// typed nil inside the interface.
type nilClient struct{ valkey.Client }

func TestUnusable(t *testing.T) {
	adaptertest.Unusable(t, valkeystore.New(nil), "nil client")
	adaptertest.Unusable(t, valkeystore.New((*nilClient)(nil)), "nil *valkeystore_test.nilClient")
	adaptertest.Unusable(t, &valkeystore.Runner{}, "zero Runner")
	adaptertest.Unusable(t, (*valkeystore.Runner)(nil), "nil Runner")
}
