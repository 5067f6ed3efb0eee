package rules_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// flakyStore is a store that fails (down) or hangs until the call's
// context ends (hang) when told to.
type flakyStore struct {
	store      core.ScriptRunner
	down, hang atomic.Bool
	calls      atomic.Int64
}

func (f *flakyStore) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	f.calls.Add(1)
	switch {
	case f.down.Load():
		return reply, fmt.Errorf("%w: the flaky store is down", core.ErrStore)
	case f.hang.Load():
		<-ctx.Done()
		return reply, fmt.Errorf("%w: %w", core.ErrStore, ctx.Err())
	}
	return f.store.RunScript(ctx, s, keys, args, reply)
}

const failureModes = `
domain: api
descriptors:
  - key: open
    rate_limit: {unit: minute, requests_per_unit: 2, failure_mode: open}
  - key: closed
    rate_limit: {unit: minute, requests_per_unit: 2, failure_mode: closed}
  - key: local
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: tokenbucket, failure_mode: local}
  - key: local_also
    rate_limit:
      unit: minute
      requests_per_unit: 2
      failure_mode: local
      also: [{unit: hour, requests_per_unit: 100}]
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 2}
`

// newFlakyRules returns Rules of failureModes on a flaky store, with a
// local memory store, both on one fake clock.
func newFlakyRules(t *testing.T, opts rules.Options) (*rules.Rules, *flakyStore) {
	t.Helper()
	clock := fakeclock.New(start)
	var stores [2]*memory.Store
	for i := range stores {
		s, err := memory.New(memory.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	flaky := &flakyStore{store: stores[0]}
	cfg, err := rules.Parse([]rules.File{{Name: "modes.yaml", Data: []byte(failureModes)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Clock, opts.LocalStore = clock, stores[1]
	r, err := rules.New(flaky, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, flaky
}

// Each rule's failure_mode decides while its store fails: open allows,
// closed denies, local decides on the local store (exactly, by the same
// limits), and a rule without one returns the store's error. Every
// failure reaches Failsafe.OnError.
func TestFailureMode(t *testing.T) {
	var reported atomic.Int64
	r, flaky := newFlakyRules(t, rules.Options{Failsafe: failsafe.Config{
		OnError: func(string, error) { reported.Add(1) },
		Logger:  quietLogger(),
	}})
	ctx := context.Background()
	decideKey := func(key string) (rules.Status, error) {
		res, err := r.Decide(ctx, "api", []rules.Descriptor{desc(key + "=a")}, 1)
		if err != nil {
			return rules.Status{}, err
		}
		return res.Statuses[0], nil
	}
	keys := []string{"open", "closed", "local", "local_also", "plain"}
	// Up: the store decides every rule, 2 a minute.
	for _, key := range keys {
		for i := range 3 {
			st, err := decideKey(key)
			if err != nil || (st.Code == rules.OK) != (i < 2) {
				t.Fatalf("store up, %s request %d: %+v, %v", key, i, st, err)
			}
		}
	}
	if reported.Load() != 0 {
		t.Fatalf("%d errors reported while the store was up", reported.Load())
	}
	flaky.down.Store(true)
	for i := range 3 {
		if st, err := decideKey("open"); err != nil || st.Code != rules.OK {
			t.Errorf("store down, open request %d: %+v, %v; want OK", i, st, err)
		}
		if st, err := decideKey("closed"); err != nil || st.Code != rules.OverLimit {
			t.Errorf("store down, closed request %d: %+v, %v; want OverLimit", i, st, err)
		}
		// The local store has counted nothing: 2 more, then denied.
		for _, key := range []string{"local", "local_also"} {
			if st, err := decideKey(key); err != nil || (st.Code == rules.OK) != (i < 2) {
				t.Errorf("store down, %s request %d: %+v, %v; want OK %v", key, i, st, err, i < 2)
			}
		}
		if _, err := decideKey("plain"); !errors.Is(err, core.ErrStore) {
			t.Errorf("store down, plain request %d: %v; want the store's error", i, err)
		}
	}
	if reported.Load() == 0 {
		t.Error("no store error reached Failsafe.OnError")
	}
}

// A store that does not answer within Failsafe.Timeout gets the mode's
// answer, not the caller's deadline.
func TestFailureModeTimeout(t *testing.T) {
	r, flaky := newFlakyRules(t, rules.Options{Failsafe: failsafe.Config{Timeout: 20 * time.Millisecond, Logger: quietLogger()}})
	flaky.hang.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Decide(ctx, "api", []rules.Descriptor{desc("open=a"), desc("closed=a")}, 1)
	if err != nil || res.Statuses[0].Code != rules.OK || res.Statuses[1].Code != rules.OverLimit {
		t.Fatalf("store hung: %+v, %v; want open OK, closed OverLimit", res, err)
	}
}

// A rule's failsafe outlives a reload: after a failure the store is left
// alone for RetryInterval, whatever configuration is loaded meanwhile.
func TestFailureModeKeptAcrossReload(t *testing.T) {
	r, flaky := newFlakyRules(t, rules.Options{Failsafe: failsafe.Config{RetryInterval: time.Hour, Logger: quietLogger()}})
	flaky.down.Store(true)
	if _, err := r.Decide(context.Background(), "api", []rules.Descriptor{desc("closed=a")}, 1); err != nil {
		t.Fatal(err)
	}
	flaky.down.Store(false)
	if _, err := r.Update([]rules.File{{Name: "modes.yaml", Data: []byte(failureModes)}}, rules.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	before := flaky.calls.Load()
	res, err := r.Decide(context.Background(), "api", []rules.Descriptor{desc("closed=a")}, 1)
	if err != nil || res.Statuses[0].Code != rules.OverLimit || flaky.calls.Load() != before {
		t.Fatalf("after a reload within RetryInterval: %+v, %v, %d store calls; want the mode's denial and none", res, err, flaky.calls.Load()-before)
	}
}

// A failure_mode is refused where it cannot be honoured: a value not
// known, an unlimited rule, local without Options.LocalStore, and
// under Options.Atomic.
func TestFailureModeErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"rate_limit: {unit: second, requests_per_unit: 1, failure_mode: maybe}", "x.yaml:5: descriptors[0].rate_limit.failure_mode: failure_mode is one of open, closed, local, got 'maybe'"},
		{"rate_limit: {unlimited: true, failure_mode: open}", "takes none of ratekit's keys (failure_mode)"},
		{"rate_limit: {unit: second, requests_per_unit: 1, also: [{unit: day, requests_per_unit: 5, failure_mode: open}]}", "unknown key 'failure_mode'"},
	} {
		_, err := rules.Parse([]rules.File{{Name: "x.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    " + strings.ReplaceAll(tt.yaml, "rate_limit: ", "rate_limit:\n      ") + "\n")}}, rules.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.yaml, err, tt.want)
		}
	}
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg, err := rules.Parse([]rules.File{{Name: "modes.yaml", Data: []byte(failureModes)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ce *rules.ConfigError
	if _, err := rules.New(store, cfg, rules.Options{}); !errors.As(err, &ce) || ce.Line != 9 || !strings.Contains(err.Error(), "Options.LocalStore") {
		t.Errorf("local without LocalStore: %v, want a ConfigError at modes.yaml:9", err)
	}
	if _, err := rules.New(store, cfg, rules.Options{Atomic: true, LocalStore: store}); !errors.As(err, &ce) || ce.Line != 5 || !strings.Contains(err.Error(), "Options.Atomic") {
		t.Errorf("under Atomic: %v, want a ConfigError at modes.yaml:5", err)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
