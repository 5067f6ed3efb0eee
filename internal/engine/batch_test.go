package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/store/memory"
)

// oneNode is a fakeBatch that says it is one node (core.SingleNode). It
// records every call; when cluster is set it answers a call marked
// AnySlot whose keys span slots as a cluster's store would, with an error
// wrapping slot.ErrCrossSlot, and from then on says it is not one node.
type oneNode struct {
	*fakeBatch
	cluster bool
	single  bool
	calls   []core.ScriptCall
}

func newOneNode() *oneNode {
	o := &oneNode{single: true}
	o.fakeBatch = &fakeBatch{fakeRunner: &fakeRunner{reply: []int64{1, 2, 0, 1000}}}
	o.results = func(calls []core.ScriptCall) []core.ScriptResult {
		out := make([]core.ScriptResult, len(calls))
		for i, c := range calls {
			o.calls = append(o.calls, kept(c))
			if o.cluster && c.AnySlot && !slot.Same(c.Keys) {
				o.single = false
				out[i].Err = fmt.Errorf("%w: %w", core.ErrStore, slot.ErrCrossSlot)
				continue
			}
			out[i].Reply = o.answer(nil, c.Keys)
		}
		return out
	}
	return o
}

func (o *oneNode) SingleNode() bool { return o.single }

// kept is a copy of c that the store may keep: its keys and arguments
// are the caller's only until RunScripts returns (core.ScriptRunner).
func kept(c core.ScriptCall) core.ScriptCall {
	keys := make([]string, len(c.Keys))
	for i, k := range c.Keys {
		keys[i] = strings.Clone(k)
	}
	c.Keys, c.Args = keys, slices.Clone(c.Args)
	return c
}

// requests returns n requests on distinct keys, which land in nearly as
// many slots.
func requests(n int) []core.Request {
	reqs := make([]core.Request, n)
	for i := range reqs {
		reqs[i] = core.Request{Key: "user:" + strconv.Itoa(i), N: int64(1 + i%3)}
	}
	return reqs
}

// On a store that is one node, AllowMany sends requests in any slots
// together: batch calls of up to 64 decisions marked AnySlot, keys and
// costs in request order, all in one RunScripts.
func TestAllowManyOneCallPerNode(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.name, func(t *testing.T) {
			o := newOneNode()
			l, err := a.new(o)
			if err != nil {
				t.Fatal(err)
			}
			reqs := requests(100)
			for i, r := range l.AllowMany(context.Background(), reqs) {
				if r.Err != nil || !r.Decision.Allowed {
					t.Fatalf("result %d: %+v", i, r)
				}
			}
			if o.batches != 1 || len(o.calls) != 2 {
				t.Fatalf("%d RunScripts of %d calls; want 1 of 2 (64 + 36 decisions)", o.batches, len(o.calls))
			}
			next := 0
			for j, c := range o.calls {
				if !c.AnySlot || c.Script.Name() != a.name {
					t.Fatalf("call %d: script %s, AnySlot %v", j, c.Script.Name(), c.AnySlot)
				}
				for x, key := range c.Keys {
					r := reqs[next]
					if want := keyspace.Key("", r.Key, ""); !strings.HasSuffix(key, want) {
						t.Fatalf("call %d key %d = %q, want it to end in %q", j, x, key, want)
					}
					// ARGV = now, mode, params..., then n per key (the
					// costs differ).
					k := len(c.Args) - len(c.Keys)
					if n := c.Args[k+x]; n != r.N {
						t.Fatalf("call %d key %d: cost %d, want %d", j, x, n, r.N)
					}
					next++
				}
			}
			if next != len(reqs) {
				t.Fatalf("%d requests sent of %d", next, len(reqs))
			}
		})
	}
}

// A batch whose requests all cost the same sends that cost once: the
// script then reads one argument instead of one per key.
func TestAllowManyOneCost(t *testing.T) {
	o := newOneNode()
	l, err := algorithms[0].new(o)
	if err != nil {
		t.Fatal(err)
	}
	reqs := requests(10)
	for i := range reqs {
		reqs[i].N = 2
	}
	plain, err := algorithms[0].new(newOneNode())
	if err != nil {
		t.Fatal(err)
	}
	one, err := engine.Of(plain).Call("x", 2)
	if err != nil {
		t.Fatal(err)
	}
	params := len(one.Args) - 3 // now, mode, params..., n
	for i, r := range l.AllowMany(context.Background(), reqs) {
		if r.Err != nil || !r.Decision.Allowed {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if len(o.calls) != 1 {
		t.Fatalf("%d calls, want 1", len(o.calls))
	}
	if args := o.calls[0].Args; len(args) != 2+params+1 || args[len(args)-1] != 2 {
		t.Fatalf("args %v: want now, mode, %d parameters, then the one cost 2", args, params)
	}
}

// A store that says it is not one node gets one call per key (per hash
// tag: a go-redis Ring places keys by tag, so two keys of one slot may
// live on two shards); a store that took itself for one node and met a
// cluster (CROSSSLOT) gets the refused requests again, key by key, in the
// same AllowMany, and each request its own decision.
func TestAllowManyPerKey(t *testing.T) {
	reqs := requests(100)
	reqs = append(reqs, reqs[0], reqs[1]) // the same keys again: one slot, in order
	for _, cluster := range []string{"says so", "CROSSSLOT"} {
		t.Run(cluster, func(t *testing.T) {
			o := newOneNode()
			if cluster == "says so" {
				o.single = false
			} else {
				o.cluster = true
			}
			l, err := algorithms[0].new(o)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range l.AllowMany(context.Background(), reqs) {
				if r.Err != nil || !r.Decision.Allowed {
					t.Fatalf("result %d: %+v", i, r)
				}
			}
			tags := map[string]bool{}
			for _, r := range reqs {
				tags[keyspace.Tag(keyspace.Key("", r.Key, ""))] = true
			}
			perKey := 0
			for _, c := range o.calls {
				if c.AnySlot {
					if cluster != "CROSSSLOT" {
						t.Fatalf("a call marked AnySlot on a store that is not one node: %q", c.Keys)
					}
					continue
				}
				for _, k := range c.Keys {
					if keyspace.Tag(k) != keyspace.Tag(c.Keys[0]) {
						t.Fatalf("a call spans keys: %q", c.Keys)
					}
				}
				perKey++
			}
			if perKey != len(tags) {
				t.Fatalf("%d calls of one key each, want %d (one per key)", perKey, len(tags))
			}
			if want := map[string]int{"says so": 1, "CROSSSLOT": 2}[cluster]; o.batches != want {
				t.Fatalf("%d RunScripts, want %d", o.batches, want)
			}
			if o.single {
				t.Fatal("the fake still says it is one node")
			}
		})
	}
}

// An error that is not about slots is each request's own, never retried.
func TestAllowManyOneNodeErrors(t *testing.T) {
	o := newOneNode()
	boom := errors.New("boom")
	o.results = func(calls []core.ScriptCall) []core.ScriptResult {
		out := make([]core.ScriptResult, len(calls))
		for i := range out {
			out[i].Err = fmt.Errorf("%w: %w", core.ErrStore, boom)
		}
		return out
	}
	l, err := algorithms[0].new(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range l.AllowMany(context.Background(), requests(10)) {
		if !errors.Is(r.Err, boom) || r.Decision.Allowed {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if o.batches != 1 {
		t.Fatalf("%d RunScripts, want 1", o.batches)
	}
}

// backwards runs the calls of each RunScripts last first, as a Redis
// store may when the server had to load the first call's script
// (NOSCRIPT, then EVAL) but knew the next one's. It is one node when
// single is set.
type backwards struct {
	s      *memory.Store
	single bool
}

func (b backwards) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return b.s.RunScript(ctx, s, keys, args, reply)
}

func (b backwards) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	for j := len(calls) - 1; j >= 0; j-- {
		c := calls[j]
		out[j].Reply, out[j].Err = b.s.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

func (b backwards) SingleNode() bool { return b.single }

// sameSlot returns n user keys whose storage keys share a cluster slot,
// which the memory store lets one script hold.
func sameSlot(n int) []string {
	bySlot := map[int][]string{}
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		s := slot.Of(keyspace.Key("", k, ""))
		if bySlot[s] = append(bySlot[s], k); len(bySlot[s]) == n {
			return bySlot[s]
		}
	}
}

// AllowMany puts no key in two calls of one RunScripts: a batch of more
// requests than one call holds, on few keys, decides as the same requests
// one by one even on a store that runs a batch's calls in another order.
func TestAllowManyCallsShareNoKey(t *testing.T) {
	clock := fakeclock.New(time.Unix(1700000000, 0))
	keys := sameSlot(3)
	for _, a := range algorithms {
		for _, single := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/one node %v", a.name, single), func(t *testing.T) {
				for _, size := range []int{65, 100, 129, 300} {
					store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
					if err != nil {
						t.Fatal(err)
					}
					ref, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
					if err != nil {
						t.Fatal(err)
					}
					l, err := a.new(backwards{store, single})
					if err != nil {
						t.Fatal(err)
					}
					want, err := a.new(ref)
					if err != nil {
						t.Fatal(err)
					}
					// Three keys, the third seldom and last: in calls of
					// 64 in order, the last call would hold it alone and
					// run first.
					reqs := make([]core.Request, size)
					for i := range reqs {
						reqs[i] = core.Request{Key: keys[i%2], N: 1}
					}
					reqs[size/3].Key, reqs[size-1].Key = keys[2], keys[2]
					ctx := context.Background()
					for i, r := range l.AllowMany(ctx, reqs) {
						d, err := want.AllowN(ctx, reqs[i].Key, reqs[i].N)
						if r.Err != nil || err != nil || !reflect.DeepEqual(r.Decision, d) {
							t.Fatalf("%d requests: item %d (%q): %+v, %v; one by one %+v, %v", size, i, reqs[i].Key, r.Decision, r.Err, d, err)
						}
					}
					store.Close()
					ref.Close()
				}
			})
		}
	}
}
