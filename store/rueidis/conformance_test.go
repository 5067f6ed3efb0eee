package rueidisstore_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
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

// Against a real redis-server, client-clock mode.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Harness{Runner: rueidisstore.New(newClient(t, srv.Addr))})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock. On
// a server that can replicate a script verbatim (Redis 5.0-6.2), it does,
// so that a script that writes after TIME must ask for its commands to be
// replicated instead.
func TestConformanceServerClock(t *testing.T) {
	srv := redistest.Start(t, redistest.VerbatimScripts(t)...)
	conformance.RunServerClock(t, rueidisstore.New(newClient(t, srv.Addr)), 3)
}
