package ratekit_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/memory"
)

// oneNode is the memory store seen as a one-node batch store, as a Redis
// server is: every call a script (no in-process path), batches in one
// RunScripts, any keys in one call.
type oneNode struct{ s *memory.Store }

func (o oneNode) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return o.s.RunScript(ctx, s, keys, args, reply)
}

func (o oneNode) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply, out[i].Err = o.s.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

func (oneNode) SingleNode() bool { return true }

// A policy's decision has the fields of its binding limit (core.Decision):
// allowed, the enforced limit with the least Remaining; denied, the
// enforced limit that denied with the longest RetryAfter; blocked,
// Remaining 0 and RetryAfter the block's end. A shadow limit never binds
// while an enforced one is there; in a policy of shadow limits alone, the
// least Remaining binds.
func TestPolicyDecisionBinds(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))
	mk := func(prefix string, capacity int64, interval time.Duration) *ratekit.Limiter {
		l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: interval, Prefix: prefix, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	wide, narrow := mk("wide:", 10, time.Second), mk("narrow:", 3, time.Minute)
	tight := mk("tight:", 3, time.Hour) // in shadow
	p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
		{Name: "wide", Limiter: wide},
		{Name: "narrow", Limiter: narrow, Penalty: time.Hour},
		{Name: "tight", Limiter: tight, Shadow: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tight.Allow(ctx, "k"); err != nil { // tight has less left than narrow
		t.Fatal(err)
	}
	own := func(d core.Decision) string {
		return fmt.Sprint(d.Allowed, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter, d.Window, d.Blocked)
	}
	// Allowed: narrow has the least Remaining of the enforced limits
	// (tight, in shadow, has less: none).
	d, err := p.AllowN(ctx, "k", 2)
	if err != nil || own(d) != own(core.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 2 * time.Minute, Window: 3 * time.Minute}) {
		t.Fatalf("allowed: %+v, %v; want narrow's fields", d, err)
	}
	// Denied by narrow (and tight, in shadow), not by wide; narrow's
	// penalty blocks the key for an hour, longer than narrow's own wait.
	d, err = p.AllowN(ctx, "k", 3)
	if err != nil || d.Allowed || !d.Blocked || d.Remaining != 0 || d.Limit != 3 || d.Window != 3*time.Minute || d.RetryAfter != time.Hour {
		t.Fatalf("denied by narrow with a penalty: %+v, %v; want narrow's Limit and Window, Remaining 0, RetryAfter the block's hour", d, err)
	}
	if err := p.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// Denied by two limits: the longest RetryAfter binds (slow's hour),
	// not the least Remaining (fast's none).
	slow, fast := mk("slow:", 10, time.Hour), mk("fast:", 3, time.Second)
	for range 3 {
		if _, err := slow.AllowN(ctx, "j", 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fast.AllowN(ctx, "j", 3); err != nil {
		t.Fatal(err)
	}
	p2, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "fast", Limiter: fast}, {Name: "slow", Limiter: slow}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err = p2.AllowN(ctx, "j", 2)
	if err != nil || own(d) != own(core.Decision{Limit: 10, Remaining: 1, RetryAfter: time.Hour, ResetAfter: 9 * time.Hour, Window: 10 * time.Hour}) {
		t.Fatalf("denied by both: %+v, %v; want slow's fields", d, err)
	}
	// A policy of shadow limits only: the least Remaining binds, and it
	// never denies.
	p3, err := ratekit.NewPolicy(ratekit.PolicyConfig{Shadow: true, Limits: []ratekit.Limit{{Name: "wide", Limiter: wide}, {Name: "tight", Limiter: tight}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d, err = p3.Allow(ctx, "m")
		if err != nil || !d.Allowed || d.Limit != 3 || d.Window != 3*time.Hour {
			t.Fatalf("shadow policy, request %d: %+v, %v; want allowed with tight's Limit and Window", i, d, err)
		}
	}
}

// AllowMany on a policy decides each request as AllowN would, in order,
// every limit of it: in process, and through batch scripts on a store
// that is one node (one call for every key) or not (a call per key).
func TestPolicyAllowMany(t *testing.T) {
	reqs := []core.Request{{Key: "a", N: 1}, {Key: "b", N: 2}, {Key: "a", N: 2}, {Key: "a", N: 1}, {Key: "{c}", N: 1}, {Key: "b", N: 3}, {Key: "", N: 1}, {Key: "a", N: 9}, {Key: "a", N: 1}}
	for i := range 70 { // past one batch script call (64)
		reqs = append(reqs, core.Request{Key: []string{"a", "b", "{c}"}[i%3], N: 1})
	}
	for _, via := range []string{"memory", "one node", "scripts"} {
		t.Run(via, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			build := func(r core.ScriptRunner) *ratekit.Limiter {
				t.Helper()
				tb, err := tokenbucket.New(r, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Second, Prefix: "tb:", Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				fw, err := fixedwindow.New(r, fixedwindow.Config{Limit: 4, Window: time.Minute, Prefix: "fw:", Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{
					{Name: "second", Limiter: tb},
					{Name: "minute", Limiter: fw, Penalty: 30 * time.Second},
					{Name: "probe", Limiter: mustBucket(t, r, "probe:", 2, clock), Shadow: true},
				}})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			s := newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))
			var r core.ScriptRunner = s
			switch via {
			case "one node":
				r = oneNode{s}
			case "scripts":
				r = struct{ core.ScriptRunner }{s}
			}
			got, want := build(r), build(newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0)))
			ctx := context.Background()
			res := got.AllowMany(ctx, reqs)
			if len(res) != len(reqs) {
				t.Fatalf("%d results for %d requests", len(res), len(reqs))
			}
			blocked := false
			for i, r := range reqs {
				d, err := want.AllowN(ctx, r.Key, r.N)
				if fmt.Sprint(err) != fmt.Sprint(res[i].Err) || !reflect.DeepEqual(d, res[i].Decision) {
					t.Fatalf("request %d (%q, %d): AllowMany %+v, %v; AllowN %+v, %v", i, r.Key, r.N, res[i].Decision, res[i].Err, d, err)
				}
				if err == nil && len(d.Limits) != 3 {
					t.Fatalf("request %d: %d limits decided", i, len(d.Limits))
				}
				blocked = blocked || d.Blocked
			}
			if !blocked {
				t.Fatal("no request met the penalty: the batch never wrote a block")
			}
		})
	}
}

func mustBucket(t *testing.T, r core.ScriptRunner, prefix string, capacity int64, clock core.Clock) *ratekit.Limiter {
	t.Helper()
	l, err := tokenbucket.New(r, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// OnShadowDeny is called after every request that a shadow limit would
// have denied and no enforced one did, whichever way it was decided:
// AllowN, AllowMany (in process and through batch scripts), a coalescing
// policy (alone and in a batch); never for Peek or Refund.
func TestOnShadowDenyOnEveryPath(t *testing.T) {
	for _, via := range []string{"memory", "one node"} {
		t.Run(via, func(t *testing.T) {
			s := newStore(t, memory.WithSweepInterval(0))
			var r core.ScriptRunner = s
			if via == "one node" {
				r = oneNode{s}
			}
			var mu sync.Mutex
			var seen []string
			p, err := ratekit.NewPolicy(ratekit.PolicyConfig{
				Limits: []ratekit.Limit{
					{Name: "loose", Limiter: mustBucket(t, r, "loose:", 100, nil)},
					{Name: "strict", Limiter: mustBucket(t, r, "strict:", 1, nil), Shadow: true},
				},
				OnShadowDeny: func(_ context.Context, key string, d core.Decision) {
					if !d.Allowed || d.Limits[1].Allowed {
						t.Errorf("OnShadowDeny(%q) with %+v", key, d)
					}
					mu.Lock()
					seen = append(seen, key)
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			c, err := ratekit.Coalesce(p)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Each key's first request passes strict; the others would not.
			p.Allow(ctx, "allow")
			p.Allow(ctx, "allow")
			p.AllowMany(ctx, []core.Request{{Key: "many", N: 1}, {Key: "many", N: 1}, {Key: "many", N: 1}})
			c.Allow(ctx, "coalesced")
			c.Allow(ctx, "coalesced")
			p.Peek(ctx, "allow")
			p.Refund(ctx, "allow", 1)
			want := []string{"allow", "many", "many", "coalesced"}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("OnShadowDeny called for %q, want %q", seen, want)
			}
		})
	}
}
