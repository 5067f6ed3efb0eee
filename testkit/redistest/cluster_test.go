package redistest

import (
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopSharedCluster()
	os.Exit(code)
}

func TestSharedCluster(t *testing.T) {
	c := SharedCluster(t)
	if c2 := SharedCluster(t); c2 != c {
		t.Fatal("SharedCluster started a second cluster")
	}
	if len(c.Masters) != 3 || c.Replica == nil {
		t.Fatalf("cluster of %d masters, replica %v", len(c.Masters), c.Replica)
	}
	for _, s := range c.Masters {
		info, err := Command(s.Addr, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_slots_assigned:16384") {
			t.Fatalf("%s: %v %s", s.Addr, err, info)
		}
	}
	repl, err := Command(c.Replica.Addr, "INFO", "replication")
	if err != nil || !strings.Contains(repl, "role:slave") {
		t.Fatalf("replica: %v %s", err, repl)
	}
}
