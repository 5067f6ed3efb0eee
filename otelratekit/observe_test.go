package otelratekit_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
)

// switchable is a store that fails while down is set and, while gate is
// set, waits in every call until gate is closed after telling entered.
type switchable struct {
	core.ScriptRunner
	down    atomic.Bool
	entered chan struct{}
	gate    chan struct{}
}

func (s *switchable) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	if s.down.Load() {
		return nil, fmt.Errorf("%w: connection refused", core.ErrStore)
	}
	return s.ScriptRunner.RunScript(ctx, sc, keys, args, reply)
}

func (*switchable) StoreName() string { return "switchable" }

// TestFailsafeState: the failsafe limiter behind a Limiter is observed:
// 1 for its state (up, down, probing), 0 for the others; decisions made
// by its policy count as the caller got them, and the store's failures as
// store errors.
func TestFailsafeState(t *testing.T) {
	r := newRig(t)
	mem, clock := newMemory(t)
	sw := &switchable{ScriptRunner: mem}
	store, err := r.tel.Store(sw)
	if err != nil {
		t.Fatal(err)
	}
	lim := tokenBucket(t, store, clock, 100)
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	fs, err := failsafe.New(failsafe.Config{
		Limiter: lim, Mode: failsafe.FailOpen, RetryInterval: time.Second,
		Clock:  core.ClockFunc(func() time.Time { return time.Unix(0, now.Load()) }),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := r.tel.Limiter("api", fs)
	if err != nil {
		t.Fatal(err)
	}
	if api.Algorithm() != "tokenbucket" || api.StoreName() != "switchable" {
		t.Fatalf("found %q on %q behind failsafe", api.Algorithm(), api.StoreName())
	}
	state := func(step, want string) {
		t.Helper()
		got := r.ints(t, "ratekit.failsafe.state")
		exp := map[string]int64{}
		for _, s := range []string{"up", "down", "probing"} {
			v := int64(0)
			if s == want {
				v = 1
			}
			exp[key("ratekit.limiter.name", "api", "ratekit.failsafe.state", s)] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("%s: ratekit.failsafe.state =\n%v\nwant\n%v", step, got, exp)
		}
	}
	ctx := context.Background()
	state("new", "up")
	api.Allow(ctx, "k")
	sw.down.Store(true)
	for i := 0; i < 3; i++ {
		if d, err := api.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("failing open: %+v, %v", d, err)
		}
	}
	state("after a failure", "down")

	sw.down.Store(false)
	sw.entered, sw.gate = make(chan struct{}), make(chan struct{})
	now.Add(int64(time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		api.Allow(ctx, "k")
	}()
	<-sw.entered
	state("during a probe", "probing")
	close(sw.gate)
	<-done
	sw.gate = nil
	state("after the probe", "up")

	decisions := r.ints(t, "ratekit.decisions")
	allowed := key("ratekit.limiter.name", "api", "ratekit.algorithm", "tokenbucket", "ratekit.store", "switchable", "ratekit.outcome", "allowed")
	if len(decisions) != 1 || decisions[allowed] != 5 {
		t.Fatalf("ratekit.decisions = %v, want 5 allowed (1 by the store, 3 failing open, 1 by the probe)", decisions)
	}
	errs := r.ints(t, "ratekit.store.errors")
	if got := errs[key("ratekit.store", "switchable", "ratekit.store.operation", "run_script", "ratekit.script", "tokenbucket", "error.type", "store")]; got != 1 {
		t.Fatalf("ratekit.store.errors = %v, want the one call that reached the failing store", errs)
	}

	// Once closed, the failsafe limiter is no longer observed.
	if err := api.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.ints(t, "ratekit.failsafe.state"); len(got) != 0 {
		t.Fatalf("after Close: %v", got)
	}
}

// TestDenyCacheHits: the deny cache behind a Limiter is observed, and its
// cached denials are decisions like the others.
func TestDenyCacheHits(t *testing.T) {
	r := newRig(t)
	lim, _ := r.bucket(t, 1)
	dc, err := denycache.New(lim)
	if err != nil {
		t.Fatal(err)
	}
	api, err := r.tel.Limiter("api", dc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		api.Allow(ctx, "k") // allowed, denied by the store, 3 denied by the cache
	}
	base := []string{"ratekit.limiter.name", "api", "ratekit.algorithm", "tokenbucket", "ratekit.store", "memory"}
	if got := r.ints(t, "ratekit.denycache.hits"); len(got) != 1 || got[key(base...)] != 3 {
		t.Fatalf("ratekit.denycache.hits = %v, want 3", got)
	}
	if got := r.ints(t, "ratekit.decisions"); got[key(append(base, "ratekit.outcome", "denied")...)] != 4 {
		t.Fatalf("ratekit.decisions = %v, want 4 denied", got)
	}
	if got := r.hists(t, "ratekit.store.duration"); got[key("ratekit.store", "memory", "ratekit.store.operation", "run_script", "ratekit.script", "tokenbucket")].count != 2 {
		t.Fatalf("store calls %+v, want 2: the cache answered the rest", got)
	}
	if r.ints(t, "ratekit.failsafe.state") != nil {
		t.Fatal("a failsafe state without a failsafe limiter")
	}
}
