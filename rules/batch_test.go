package rules_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// remoteStore is a memory store seen as a remote one: scripts only (no
// core.LocalStore), one node, batches counted.
type remoteStore struct {
	store            *memory.Store
	scripts, batches atomic.Int64
}

func (s *remoteStore) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	s.scripts.Add(1)
	return s.store.RunScript(ctx, sc, keys, args, reply)
}

func (s *remoteStore) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	s.batches.Add(1)
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply, out[i].Err = s.store.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

func (*remoteStore) SingleNode() bool { return true }

const batchConfig = `
domain: b
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: c
    rate_limit: {unit: minute, requests_per_unit: 6}
  - key: tb
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: tokenbucket, burst: 3}
  - key: gc
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: gcra}
  - key: also
    rate_limit:
      unit: minute
      requests_per_unit: 5
      also: [{unit: hour, requests_per_unit: 8, name: hourly}]
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: zero
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: free
    rate_limit: {unlimited: true}
  - key: wild
    value: "x*"
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: repl
    rate_limit:
      unit: minute
      requests_per_unit: 9
      replaces: [{name: named}]
  - key: named
    rate_limit: {unit: minute, requests_per_unit: 1, name: named}
`

// On a store outside the process, a request's descriptors of one limiter
// go in one AllowMany: one round trip, and the very decisions each would
// get on its own (the memory store, deciding in process, decides them one
// by one): drawn requests of 1 to 5 descriptors, repeated ones, costs of
// 0 to 6, overrides, on both, compared.
func TestBatchedDescriptorsDecideAsOneByOne(t *testing.T) {
	clock := fakeclock.New(start)
	direct, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	inner, err := memory.New(memory.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	remote := &remoteStore{store: inner}
	cfg, err := rules.Parse([]rules.File{{Name: "b.yaml", Data: []byte(batchConfig)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := rules.New(direct, cfg, rules.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	many, err := rules.New(remote, cfg, rules.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}

	// Three descriptors of the default algorithm: one round trip.
	ds := []rules.Descriptor{desc("a=r"), desc("c=r"), desc("quota=r")}
	if _, err := many.Decide(context.Background(), "b", ds, 1); err != nil {
		t.Fatal(err)
	}
	if s, b := remote.scripts.Load(), remote.batches.Load(); s != 0 || b != 1 {
		t.Fatalf("3 descriptors of one algorithm: %d script calls and %d batches, want 0 and 1", s, b)
	}
	if _, err := one.Decide(context.Background(), "b", ds, 1); err != nil {
		t.Fatal(err)
	}

	keys := []string{"a", "c", "tb", "gc", "also", "shadow", "quota", "zero", "free", "wild", "repl", "named", "none"}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 3000 {
		ds := make([]rules.Descriptor, 1+rng.IntN(5))
		for i := range ds {
			value := fmt.Sprintf("x%d", rng.IntN(3))
			ds[i] = desc(keys[rng.IntN(len(keys))] + "=" + value)
			if rng.IntN(8) == 0 {
				h := int64(rng.IntN(7))
				ds[i].Hits = &h
			}
			if rng.IntN(12) == 0 {
				ds[i].Limit = &rules.Override{RequestsPerUnit: uint32(rng.IntN(6)), Unit: rules.Minute}
			}
		}
		hits := int64(rng.IntN(3))
		a, errA := one.Decide(context.Background(), "b", ds, hits)
		b, errB := many.Decide(context.Background(), "b", ds, hits)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d, %v hits %d:\none by one %+v, %v\nbatched    %+v, %v", step, ds, hits, a, errA, b, errB)
		}
		clock.Advance(time.Duration(rng.IntN(4000)) * time.Millisecond)
	}
	if remote.batches.Load() < 100 {
		t.Errorf("%d batches in 3000 requests: the batched path was hardly taken", remote.batches.Load())
	}
}
