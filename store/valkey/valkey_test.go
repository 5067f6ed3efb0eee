package valkeystore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
	"github.com/ratekit/ratekit/testkit/adaptertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// store returns a store on a valkey-go client for addr, closed when t
// ends.
func store(t *testing.T, addr string, opts ...scriptproto.Option) *scriptproto.Runner {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r, err := valkeystore.New(c, opts...)
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
	doomed := redistest.Start(t)
	dead := store(t, doomed.Addr) // connects, then its server dies
	doomed.Kill()
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  store(t, srv.Addr),
		Name:    "valkey",
		Dead:    dead,
		OneNode: true,
		Do: func(_ context.Context, args ...string) (string, error) {
			return redistest.Command(srv.Addr, args...)
		},
	})
}

func TestNewRefusesANilClient(t *testing.T) {
	if r, err := valkeystore.New(nil); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "valkey: a nil client") || r != nil {
		t.Errorf("New(nil) = %v, %v; want ErrInvalidConfig", r, err)
	}
}
