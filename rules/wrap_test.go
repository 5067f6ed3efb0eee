package rules_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/rules"
)

// Behind a deny cache, rules decide alike: denials come from the cache,
// each limit's (Params) its own.
func TestDecideBehindDenycache(t *testing.T) {
	r, _ := newRules(t, another, rules.Options{Wrap: func(l core.Limiter) (core.Limiter, error) {
		return denycache.New(l)
	}})
	for i := range 25 {
		res := decide(t, r, "another", 1, desc("key2=a"), desc("key3=a"))
		if want := i < 20; (res.Statuses[0].Code == rules.OK) != want {
			t.Fatalf("request %d, key2: %+v", i, res.Statuses[0])
		}
		if want := i < 10; (res.Statuses[1].Code == rules.OK) != want {
			t.Fatalf("request %d, key3: %+v", i, res.Statuses[1])
		}
	}
}

// Behind failsafe, a store that fails decides as its Mode says, and the
// error does not reach the caller.
func TestDecideBehindFailsafe(t *testing.T) {
	broken := brokenStore{}
	for _, tt := range []struct {
		mode    failsafe.Mode
		allowed bool
	}{{failsafe.FailOpen, true}, {failsafe.FailClosed, false}} {
		cfg, err := rules.Parse([]rules.File{{Name: "a.yaml", Data: []byte(another)}}, rules.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := rules.New(broken, cfg, rules.Options{Wrap: func(l core.Limiter) (core.Limiter, error) {
			return failsafe.New(failsafe.Config{Limiter: l, Mode: tt.mode})
		}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Decide(context.Background(), "another", []rules.Descriptor{desc("key2=a")}, 1)
		if err != nil || res.Allowed != tt.allowed {
			t.Errorf("%v: %v, %v; want allowed %v", tt.mode, res, err, tt.allowed)
		}
	}
	// Without failsafe, the store's error is the decision's.
	cfg, _ := rules.Parse([]rules.File{{Name: "a.yaml", Data: []byte(another)}}, rules.LoadOptions{})
	r, err := rules.New(broken, cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Decide(context.Background(), "another", []rules.Descriptor{desc("key2=a")}, 1); !errors.Is(err, core.ErrStore) {
		t.Errorf("a failing store: %v, want core.ErrStore", err)
	}
}

type brokenStore struct{}

func (brokenStore) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return reply, core.ErrStore
}
