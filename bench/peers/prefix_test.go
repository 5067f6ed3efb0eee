package main

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// On a server the user names (-redis), the harness writes only under its
// prefix and leaves nothing behind: every case of every store, algorithm
// and peer, and the redis-benchmark ceilings, run once, briefly, against
// a server that holds keys of its own. Keyspace notifications name every
// key any command wrote, expired or deleted while the harness ran.
func TestUserServerKeepsToPrefix(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skipf("SKIPPED: redis-server not found (%v): the harness's keys on a user's server are not checked", err)
	}
	if testing.Short() {
		t.Skip("SKIPPED in -short: runs every case of the harness once")
	}
	srv, err := startRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	const prefix = "rkt:user:"
	tg, err := newTarget("redis://"+srv.addr, "", prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := tg.goredis(0)
	defer c.Close()
	// The user's own keys, one named like a ratekit key without the prefix.
	theirs := map[string]string{"app:session:1": "alice", "ratekit:tb:{user:1}": "not ours", "bench:tokenbucket:x": "nor this"}
	for k, v := range theirs {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KA").Err(); err != nil {
		t.Fatal(err)
	}
	sub := c.PSubscribe(ctx, "__keyspace@*__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	var mu sync.Mutex
	touched := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			_, key, _ := strings.Cut(m.Channel, "__:")
			mu.Lock()
			touched[key]++
			mu.Unlock()
		}
	}()

	o := options{
		rounds: 1, duration: 20 * time.Millisecond, goroutines: []int{1, 4}, keys: 200,
		peers: true, ceilings: true, ceilingReqs: 300, denyCache: true, hotKey: true,
	}
	if algos, err = ratekitAlgos(); err != nil {
		t.Fatal(err)
	}
	if err := tg.claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := runAll(ctx, o, tg, newMeter(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	// Notifications come in the order of the writes: once the marker's
	// has come, every earlier one has.
	marker := prefix + "marker"
	if err := c.Set(ctx, marker, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		seen := touched[marker] > 0
		mu.Unlock()
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification of the marker in a minute")
		}
	}
	sub.Close()
	<-done
	c.Del(ctx, marker)

	mu.Lock()
	defer mu.Unlock()
	var outside []string
	ours := 0
	for k := range touched {
		if strings.HasPrefix(k, prefix) {
			ours++
		} else {
			outside = append(outside, k)
		}
	}
	sort.Strings(outside)
	if len(outside) > 0 {
		t.Errorf("the harness touched %d keys outside %q: %q", len(outside), prefix, outside[:min(len(outside), 20)])
	}
	if ours < 1000 {
		t.Errorf("notifications named %d keys under the prefix: the check saw too little to mean anything", ours)
	}
	// Every Redis peer keeps state: one that writes nothing is not
	// measured doing what it does in use.
	for _, family := range []string{"rate:", "ulule", "throttled:"} {
		n := 0
		for k := range touched {
			if strings.HasPrefix(k, prefix+family) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no key under %q: that peer wrote no state", prefix+family)
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(theirs) {
		sort.Strings(keys)
		t.Errorf("after the run the server holds %q, want only the user's %d keys", keys[:min(len(keys), 20)], len(theirs))
	}
	for k, v := range theirs {
		if got, err := c.Get(ctx, k).Result(); err != nil || got != v {
			t.Errorf("the user's %q = %q, %v; want %q untouched", k, got, err, v)
		}
	}
}
