package goredisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// A Ring of two shards places each key by its hash tag, not its cluster
// slot: two keys in one slot may live on two shards. A batch (AllowMany,
// or coalesced calls) must decide each on its own shard, so keys of two
// tags never share a script there, even in one slot.
func TestRingBatchesKeepToTheirShards(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}, MaxRetries: -1})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	const prefix = "ring:"
	lim, err := tokenbucket.New(newStore(t, ring), tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	// shard returns the server that holds key's state once Allow wrote it.
	shard := func(key string) string {
		if _, err := lim.Allow(ctx, key); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*redistest.Server{a, b} {
			if n, err := redistest.Command(s.Addr, "EXISTS", keyspace.Key(prefix, key, "")); err == nil && n == "1" {
				return s.Addr
			}
		}
		t.Fatalf("no shard holds %q", key)
		return ""
	}
	// Two keys in one slot on two shards.
	bySlot := map[int]string{}
	var k1, k2 string
	for i := 0; k1 == ""; i++ {
		if i > 200000 {
			t.Fatal("no two keys of one slot on two shards")
		}
		k := "k" + strconv.Itoa(i)
		s := slot.Of(keyspace.Key(prefix, k, ""))
		if other, ok := bySlot[s]; ok && shard(other) != shard(k) {
			k1, k2 = other, k
		}
		bySlot[s] = k
	}
	for _, k := range []string{k1, k2} {
		if err := lim.Reset(ctx, k); err != nil {
			t.Fatal(err)
		}
	}

	for i, r := range lim.AllowMany(ctx, []core.Request{{Key: k1, N: 2}, {Key: k2, N: 3}}) {
		if r.Err != nil || !r.Decision.Allowed {
			t.Fatalf("AllowMany item %d: %+v", i, r)
		}
	}
	co, err := ratekit.Coalesce(lim)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{k1, k2} {
		if _, err := co.Allow(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for k, want := range map[string]int64{k1: 2, k2: 1} {
		if d, err := lim.Peek(ctx, k); err != nil || d.Remaining != want {
			t.Fatalf("Peek(%q) on its shard: %+v, %v; want %d left (the batch decided it on the other shard?)", k, d, err, want)
		}
	}
}
