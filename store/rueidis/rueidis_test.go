package rueidisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/adaptertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// newClient returns a rueidis client for addr, closed when t ends.
func newClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newStore returns rueidisstore.New(c, opts...), failing t on an error.
func newStore(t testing.TB, c rueidis.Client, opts ...scriptproto.Option) *scriptproto.Runner {
	t.Helper()
	r, err := rueidisstore.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	// A client for a server that dies right after the client connects.
	doomed := redistest.Start(t)
	dead := newClient(t, doomed.Addr)
	doomed.Kill()
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  newStore(t, c),
		Name:    "rueidis",
		Dead:    newStore(t, dead),
		OneNode: true,
		Do: func(_ context.Context, args ...string) (string, error) {
			return redistest.Command(srv.Addr, args...)
		},
	})
}

func TestNewRefusesANilClient(t *testing.T) {
	if r, err := rueidisstore.New(nil); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "rueidis: a nil client") || r != nil {
		t.Errorf("New(nil) = %v, %v; want ErrInvalidConfig", r, err)
	}
}
