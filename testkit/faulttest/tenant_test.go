package faulttest

import (
	"context"
	"sort"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestTenantIsolation: one tenant's crafted keys cannot reach another
// tenant's state, nor another key's: every storage key on the server is
// distinct and stays under its tenant's prefix.
func TestTenantIsolation(t *testing.T) {
	srv := redistest.Start(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	store, err := goredisstore.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(prefix string) *ratekit.Limiter {
		l, err := fixedwindow.New(store, fixedwindow.Config{Limit: 1, Window: time.Hour, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	victim, attacker := tenant("t2:"), tenant("t1:")
	if d, _ := victim.Allow(ctx, "victim"); !d.Allowed {
		t.Fatal("victim's first request denied")
	}
	crafted := []string{
		"victim", "}victim", "{victim}", "x}:t2:{victim", "%7Bvictim%7D", "t2:{victim}", "}", "{", "",
		"victim}", "\x00victim", "victim\x00", "../t2:{victim}", "%", "%25", "%7D",
	}
	for _, k := range crafted {
		d, err := attacker.Allow(ctx, k)
		if k == "" {
			if err == nil {
				t.Fatal("empty key accepted")
			}
			continue
		}
		if err != nil || !d.Allowed {
			t.Fatalf("attacker key %q: %+v, %v: it shares state with another key", k, d, err)
		}
	}
	if d, _ := victim.Peek(ctx, "victim"); d.Remaining != 0 {
		t.Fatalf("the victim's state changed: %+v", d)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	if len(keys) != len(crafted) { // every crafted key but "" plus the victim's
		t.Fatalf("%d storage keys for %d distinct user keys: %q", len(keys), len(crafted), keys)
	}
	for _, k := range keys {
		if k != "t2:{victim}" && k[:4] != "t1:{" {
			t.Fatalf("storage key %q escaped its tenant's prefix", k)
		}
	}
	t.Logf("%q", keys)
}
