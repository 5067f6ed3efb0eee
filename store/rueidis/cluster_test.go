package rueidisstore_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/testkit/clustertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestCluster runs the conformance suite on a real local Redis Cluster
// through rueidis in cluster mode, then the cluster checks (which end with
// a failover).
func TestCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	r := newStore(t, client)
	t.Run("OneAddress", func(t *testing.T) {
		one, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Masters[0].Addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(one.Close)
		clustertest.OneAddress(t, c, newStore(t, one))
	})
	t.Run("Conformance", func(t *testing.T) { conformance.Run(t, conformance.Harness{Runner: r}) })
	t.Run("HalfMovedSlot", func(t *testing.T) { clustertest.HalfMovedSlot(t, c, r) })
	t.Run("Migration", func(t *testing.T) { clustertest.Migration(t, c, r) })
	clustertest.Run(t, c, r)
}
