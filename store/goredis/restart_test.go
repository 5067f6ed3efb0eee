package goredisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// resumeWithin is how soon after a restarted server answers PING the
// store's decisions must come from it again: go-redis alone takes up to
// a second (its pool's probe), the store a few of its dials on demand
// (DialerRetryTimeout apart), plus a margin for a busy machine.
const resumeWithin = 500 * time.Millisecond

// After Redis restarts, decisions resume as soon as the server answers,
// not when go-redis' pool, which answers its last dial error once
// PoolSize dials have failed, probes again (a second later): lone calls,
// concurrent calls (pipelined) and AllowMany alike. The client the store
// dials on demand with is closed once the client's own pool dials again:
// no connection is left behind.
func TestRestartResumesPromptly(t *testing.T) {
	srv := redistest.Start(t)
	const poolSize = 4
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true, PoolSize: poolSize})
	t.Cleanup(func() { c.Close() })
	lim, err := tokenbucket.New(newStore(t, c), tokenbucket.Config{Capacity: 1 << 20, RefillRate: 1 << 20, RefillInterval: time.Second, Prefix: "restart:"})
	if err != nil {
		t.Fatal(err)
	}
	// Every call is bounded, by a second: long enough that a busy machine
	// does not fail a call that the store sends, so that what is measured
	// is when the store sends again.
	allow := func(key string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := lim.Allow(ctx, key)
		return err
	}
	many := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, r := range lim.AllowMany(ctx, []core.Request{{Key: "m1", N: 1}, {Key: "m2", N: 1}, {Key: "m3", N: 1}}) {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}
	concurrent := func() error {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = allow("c" + strconv.Itoa(i)) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}

	for round, decide := range []func() error{func() error { return allow("lone") }, concurrent, many} {
		// The store decides (a busy machine may fail a call or two
		// after the last round's restart: not what is measured here).
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			err := decide()
			if err == nil {
				break
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("round %d, before the restart: %v", round, err)
			}
		}
		srv.Kill()
		// Enough refused dials that go-redis' pool stops dialing and
		// answers its last dial error.
		refused := 0
		for i := 0; i < 4*poolSize; i++ {
			if err := decide(); err != nil && strings.Contains(err.Error(), "connection refused") {
				refused++
			}
		}
		if refused == 0 {
			t.Fatalf("round %d: no call failed with connection refused while the server was down", round)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		var last error
		for {
			if last = decide(); last == nil {
				break
			}
			if time.Since(back) > 3*time.Second {
				t.Fatalf("round %d: no decision 3 s after the restart: %v", round, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(back)
		t.Logf("round %d: decisions resumed %v after the restart", round, took)
		if took > resumeWithin {
			t.Errorf("round %d: decisions resumed %v after the restart, more than %v", round, took, resumeWithin)
		}
	}

	// Once go-redis' own probe has reached the server (a second at most),
	// the client's pool dials again and the store's own client is closed:
	// the server sees no more connections than the pool holds (and the
	// one that counts them).
	time.Sleep(1500 * time.Millisecond)
	for range 10 {
		if err := concurrent(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		info, err := redistest.Command(srv.Addr, "CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(strings.TrimSpace(info), "\n") + 1
		if n <= poolSize+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the server, more than the client's pool (%d) and CLIENT LIST's own:\n%s", n, poolSize, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
