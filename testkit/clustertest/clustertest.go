// Package clustertest checks a store on a real local Redis Cluster: keys
// spread over every master, user keys with braces, keys in different
// slots refused without a panic, NOSCRIPT after SCRIPT FLUSH and after
// a failover to a replica that never saw the scripts (Run), and every
// decision run exactly once while a slot moves (HalfMovedSlot, Migration).
//
// It is one of ratekit's own test kits (testkit/): importable, so that
// the stores' modules can use it, with no promise of compatibility.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/testkit/redistest"
)

func noTwin(core.Tx, []string, []int64, []int64) ([]int64, error) { return nil, errors.New("no twin") }

// two replies with the number of its keys.
var two = core.NewScript("two", `return {#KEYS}`, noTwin, false)

// Run runs the cluster tests for runner, a store over a cluster client
// connected to c. It fails over c's first master to its replica, so run it
// after the tests that need the original layout.
func Run(t *testing.T, c *redistest.Cluster, runner core.ScriptRunner) {
	ctx := context.Background()
	prefix := fmt.Sprintf("clustertest:%d:", time.Now().UnixNano())
	lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 1000, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("KeysSpreadOverEveryMaster", func(t *testing.T) {
		for i := 0; i < 60; i++ {
			if d, err := lim.Allow(ctx, "user:"+strconv.Itoa(i)); err != nil || !d.Allowed {
				t.Fatalf("Allow: %+v, %v", d, err)
			}
		}
		for _, m := range c.Masters {
			n, err := redistest.Command(m.Addr, "EVAL", "return #redis.call('KEYS', ARGV[1])", "0", prefix+"*")
			if err != nil {
				t.Fatal(err)
			}
			if n == "0" {
				t.Fatalf("master %s holds none of the keys", m.Addr)
			}
			t.Logf("master %s holds %s keys", m.Addr, n)
		}
	})

	t.Run("BracesInUserKeys", func(t *testing.T) {
		keys := []string{"{a}", "%7Ba%7D", "}", "{", "a}b{c", "{}", "x{y}z"}
		for _, k := range keys {
			if d, err := lim.AllowN(ctx, k, 10); err != nil || d.Remaining != 990 {
				t.Fatalf("AllowN(%q): %+v, %v (state shared with another key?)", k, d, err)
			}
		}
		// A multi-key script over one user key's storage keys works: they
		// share the user key's tag, whatever braces it holds.
		two := core.NewScript("two", `return {#KEYS}`, noTwin, false)
		for _, k := range keys {
			ks := []string{keyspace.Key(prefix, k, ":1"), keyspace.Key(prefix, k, ":2")}
			if got, err := runner.RunScript(ctx, two, ks, nil, nil); err != nil || got[0] != 2 {
				t.Fatalf("two keys of %q: %v, %v", k, got, err)
			}
		}
		res := lim.AllowMany(ctx, []core.Request{{Key: "{a}", N: 1}, {Key: "%7Ba%7D", N: 2}, {Key: "}", N: 3}})
		for i, want := range []int64{989, 988, 987} {
			if res[i].Err != nil || res[i].Decision.Remaining != want {
				t.Fatalf("AllowMany item %d: %+v", i, res[i])
			}
		}
	})

	t.Run("KeysInDifferentSlotsAreAnErrorNotAPanic", func(t *testing.T) {
		a, b := "p:{a}", "p:{b}"
		if slot.Of(a) == slot.Of(b) {
			t.Fatal("test keys share a slot")
		}
		if _, err := runner.RunScript(ctx, two, []string{a, b}, nil, nil); !errors.Is(err, core.ErrStore) {
			t.Fatalf("RunScript: %v", err)
		}
		if br, ok := runner.(core.BatchRunner); ok {
			res := br.RunScripts(ctx, []core.ScriptCall{{Script: two, Keys: []string{a, b}}, {Script: two, Keys: []string{a}}})
			if !errors.Is(res[0].Err, core.ErrStore) || res[1].Err != nil {
				t.Fatalf("RunScripts: %v, %v", res[0].Err, res[1].Err)
			}
		}
	})

	t.Run("NotOneNode", func(t *testing.T) {
		// A cluster client is not one node: a batch call marked AnySlot
		// is refused like any script whose keys span slots.
		if sn, ok := runner.(core.SingleNode); ok && sn.SingleNode() {
			t.Fatalf("%T over a cluster says it is one node", runner)
		}
		if br, ok := runner.(core.BatchRunner); ok {
			res := br.RunScripts(ctx, []core.ScriptCall{{Script: two, Keys: []string{"p:{a}", "p:{b}"}, AnySlot: true}})
			if !errors.Is(res[0].Err, slot.ErrCrossSlot) {
				t.Fatalf("AnySlot call on a cluster: %v", res[0].Err)
			}
		}
	})

	t.Run("ScriptFlushOnEveryNode", func(t *testing.T) {
		for round := 0; round < 3; round++ {
			for _, n := range c.Nodes() {
				if _, err := redistest.Command(n.Addr, "SCRIPT", "FLUSH"); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 20; i++ {
				if _, err := lim.Allow(ctx, "flush:"+strconv.Itoa(i)); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			reqs := make([]core.Request, 30)
			for i := range reqs {
				reqs[i] = core.Request{Key: "flushbatch:" + strconv.Itoa(i), N: 1}
			}
			for i, r := range lim.AllowMany(ctx, reqs) {
				if r.Err != nil || !r.Decision.Allowed {
					t.Fatalf("round %d batch item %d: %+v", round, i, r)
				}
			}
		}
	})

	t.Run("FailoverToAReplicaWithoutTheScripts", func(t *testing.T) {
		// A key on the first master, whose replica will take over.
		key := ""
		for i := 0; ; i++ {
			k := "failover:" + strconv.Itoa(i)
			if slot.Of(keyspace.Key(prefix, k, "")) <= 5460 {
				key = k
				break
			}
		}
		first, err := lim.AllowN(ctx, key, 5)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := redistest.Command(c.Replica.Addr, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if _, err := redistest.Command(c.Replica.Addr, "CLUSTER", "FAILOVER"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			info, _ := redistest.Command(c.Replica.Addr, "INFO", "replication")
			if strings.Contains(info, "role:master") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica did not take over: %s", info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The new master never ran a script: the first call meets NOSCRIPT
		// (after MOVED) and must still decide, on the replicated state.
		var d core.Decision
		for {
			d, err = lim.AllowN(ctx, key, 5)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // the client may see the old layout for a moment
		}
		if err != nil || !d.Allowed || d.Remaining != first.Remaining-5 {
			t.Fatalf("after failover: %+v, %v; want %d remaining", d, err, first.Remaining-5)
		}
		res := lim.AllowMany(ctx, []core.Request{{Key: key, N: 1}, {Key: "failover:other", N: 1}})
		if res[0].Err != nil || res[0].Decision.Remaining != d.Remaining-1 || res[1].Err != nil {
			t.Fatalf("batch after failover: %+v", res)
		}
	})
}

// OneAddress checks runner, a store over a client that takes c's first
// master for a server of its own (one node, not a cluster client), as a
// client behind one address of a cluster would: a batch of keys in many
// slots is refused by the server (CROSSSLOT), sent again slot by slot,
// and decided; from then on the store knows it is not one node.
func OneAddress(t *testing.T, c *redistest.Cluster, runner core.ScriptRunner) {
	ctx := context.Background()
	sn, ok := runner.(core.SingleNode)
	if !ok || !sn.SingleNode() {
		t.Fatalf("%T over a one-node client does not say it is one node", runner)
	}
	prefix := fmt.Sprintf("clustertest:one:%d:", time.Now().UnixNano())
	lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	// Keys the first master serves (slots 0-5460), in many slots, each
	// three times: allowed, allowed, denied.
	var keys []string
	for i := 0; len(keys) < 20; i++ {
		k := "u" + strconv.Itoa(i)
		if slot.Of(keyspace.Key(prefix, k, "")) <= 5460 {
			keys = append(keys, k)
		}
	}
	var reqs []core.Request
	for round := 0; round < 3; round++ {
		for _, k := range keys {
			reqs = append(reqs, core.Request{Key: k, N: 1})
		}
	}
	for i, r := range lim.AllowMany(ctx, reqs) {
		round := i / len(keys)
		if r.Err != nil || r.Decision.Allowed != (round < 2) {
			t.Fatalf("request %d (round %d on its key): %+v", i, round, r)
		}
	}
	if sn.SingleNode() {
		t.Fatal("still one node after the server said CROSSSLOT")
	}
	for i, r := range lim.AllowMany(ctx, reqs[:len(keys)]) {
		if r.Err != nil || r.Decision.Allowed {
			t.Fatalf("request %d of the next batch: %+v", i, r)
		}
	}
}
