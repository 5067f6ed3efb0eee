package rueidisstore_test

import (
	"testing"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// Against a real redis-server, client-clock mode.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	conformance.Run(t, conformance.Harness{Runner: newStore(t, newClient(t, srv.Addr))})
}

// Against a real redis-server in server-time mode: every decision at the
// server's TIME, each algorithm's bound checked on the server's clock. On
// a server that can replicate a script verbatim (Redis 5.0-6.2), it does,
// so that a script that writes after TIME must ask for its commands to be
// replicated instead.
func TestConformanceServerClock(t *testing.T) {
	srv := redistest.Start(t, redistest.VerbatimScripts(t)...)
	conformance.RunServerClock(t, newStore(t, newClient(t, srv.Addr)), 3)
}
