package ratekit_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
)

// lendingRunner answers every script with an allowing reply and copies the
// keys it keeps, as the store contract asks (keys are the caller's only
// during the call).
type lendingRunner struct {
	keys [][]string
	copy bool
}

func (r *lendingRunner) RunScript(_ context.Context, _ *core.Script, keys []string, _ []int64, reply []int64) ([]int64, error) {
	if r.copy {
		kept := make([]string, len(keys))
		for i, k := range keys {
			kept[i] = string([]byte(k))
		}
		r.keys = append(r.keys, kept)
	}
	for range len(keys) {
		reply = append(reply, 1, 5, 0, 1000)
	}
	if len(keys) == 2 {
		reply = reply[:8] // no penalty key: two limits
	}
	return append(reply, 0, 0), nil
}

func lendingPolicy(t *testing.T, r *lendingRunner) *ratekit.Limiter {
	t.Helper()
	tb, err := tokenbucket.New(r, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: "tb:"})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := fixedwindow.New(r, fixedwindow.Config{Limit: 10, Window: time.Minute, Prefix: "fw:"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "second", Limiter: tb}, {Name: "minute", Limiter: fw}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A policy decision builds its keys and arguments in reused buffers, which
// the store copies what it keeps of: its only allocation is the decision's
// Limits.
func TestPolicyLendsKeys(t *testing.T) {
	r := &lendingRunner{copy: true}
	p := lendingPolicy(t, r)
	ctx := context.Background()
	for _, key := range []string{"alice", "b{o}b", "a-much-longer-user-key-than-the-first-one-" + string(make([]byte, 300))} {
		d, err := p.Allow(ctx, key)
		if err != nil || !d.Allowed || len(d.Limits) != 2 {
			t.Fatalf("Allow(%q) = %+v, %v", key, d, err)
		}
	}
	want := [][]string{{"tb:{alice}", "fw:{alice}"}, {"tb:{b%7Bo%7Db}", "fw:{b%7Bo%7Db}"}}
	if len(r.keys) != 3 || !slices.Equal(r.keys[0], want[0]) || !slices.Equal(r.keys[1], want[1]) {
		t.Fatalf("keys sent %q, want %q first", r.keys, want)
	}

	if raceEnabled || testing.CoverMode() != "" {
		return // the race detector's sync.Pool drops frames; coverage allocates
	}
	r.copy = false
	if n := testing.AllocsPerRun(100, func() {
		if _, err := p.Allow(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("a policy decision allocates %v times, want 1 (its Limits)", n)
	}
}
