package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
)

// The state machine also decides through a coalescing limiter
// (ratekit.Coalesce) over the store under test, on the same keys as the
// plain one: single calls at random, and bursts of concurrent calls that
// are made to queue behind a call held in flight, so that they go to the
// store as batches exactly as under load.

// coalesced returns the coalescing form of l.
func coalesced(t *rapid.T, l *ratekit.Limiter) *ratekit.Limiter {
	c, err := ratekit.Coalesce(l)
	if err != nil {
		t.Fatalf("ratekit.Coalesce: %v", err)
	}
	return c
}

// gate is the store under test, which can hold every call until it is
// opened, saying so on arrived. It runs batches as the store does
// (core.BatchRunner; one call at a time when the store has none) and is
// one node when the store is (core.SingleNode). It counts the keys of
// each call sent during a burst, and runs those calls one at a time in
// the order they arrived: a group has two calls in flight, and a batch
// queued behind them may otherwise reach the store before the second,
// an order the one-by-one reference cannot follow (and need not: the
// calls are concurrent).
type gate struct {
	next core.ScriptRunner

	mu      sync.Mutex
	shut    chan struct{} // nil while open
	arrived chan struct{}
	rec     bool  // counting: from close to the end of a burst
	sizes   []int // each call's number of keys, while counting
	// During a burst each call takes a ticket as it arrives and runs
	// when every earlier ticket's call has returned.
	tickets, served int
	turn            *sync.Cond
}

var (
	_ core.BatchRunner = (*gate)(nil)
	_ core.SingleNode  = (*gate)(nil)
)

func newGate(next core.ScriptRunner) *gate {
	g := &gate{next: next}
	g.turn = sync.NewCond(&g.mu)
	return g
}

// hold runs before each call: it records the call and, while the gate is
// shut, waits for it to open; during a burst it then waits for the call's
// turn. The caller calls the function it returns when the call returns.
func (g *gate) hold(keys ...[]string) (release func()) {
	g.mu.Lock()
	shut, arrived := g.shut, g.arrived
	ticket := -1
	if g.rec {
		for _, k := range keys {
			g.sizes = append(g.sizes, len(k))
		}
		ticket = g.tickets
		g.tickets++
	}
	g.mu.Unlock()
	if shut != nil {
		arrived <- struct{}{}
		<-shut
	}
	if ticket < 0 {
		return func() {}
	}
	g.mu.Lock()
	for g.served != ticket {
		g.turn.Wait()
	}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.served++
		g.turn.Broadcast()
		g.mu.Unlock()
	}
}

func (g *gate) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	defer g.hold(keys)()
	return g.next.RunScript(ctx, s, keys, args, reply)
}

func (g *gate) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	keys := make([][]string, len(calls))
	for i, c := range calls {
		keys[i] = c.Keys
	}
	defer g.hold(keys...)()
	if br, ok := g.next.(core.BatchRunner); ok {
		return br.RunScripts(ctx, calls)
	}
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply, out[i].Err = g.next.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

func (g *gate) SingleNode() bool {
	sn, ok := g.next.(core.SingleNode)
	return ok && sn.SingleNode()
}

// close holds every call from now on.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.arrived, g.rec, g.sizes = make(chan struct{}), make(chan struct{}, 1024), true, nil
	g.tickets, g.served = 0, 0
}

// open lets every held call through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.shut)
	g.shut = nil
}

// parked is a context that says when a call first waits on it, which a
// coalesced call does only once it is queued.
type parked struct {
	context.Context
	once sync.Once
	in   chan struct{}
}

func (p *parked) Done() <-chan struct{} {
	p.once.Do(func() { close(p.in) })
	return p.Context.Done()
}

// decided is one call's answer.
type decided struct {
	d   core.Decision
	err error
}

// burst sends reqs through l, a coalescing limiter over g, as concurrent
// calls: with g shut, each call starts once the one before it is held at
// g (one of the first two of its group, sent at once), queued behind
// such calls, or answered (a bad request); then g opens. It returns each call's answer,
// and the number of keys of each call the store was sent.
func burst(t *rapid.T, g *gate, l *ratekit.Limiter, reqs []core.Request) ([]decided, []int) {
	g.close()
	outs := make([]chan decided, len(reqs))
	for i, r := range reqs {
		p := &parked{Context: context.Background(), in: make(chan struct{})}
		out := make(chan decided, 1)
		outs[i] = out
		go func() {
			d, err := l.AllowN(p, r.Key, r.N)
			out <- decided{d, err}
		}()
		select {
		case <-g.arrived:
		case <-p.in:
		case r := <-out:
			out <- r
		case <-time.After(time.Minute):
			g.open()
			t.Fatalf("burst: call %d (%+v) neither reached the store, nor queued, nor returned", i, r)
		}
	}
	g.open()
	res := make([]decided, len(reqs))
	for i, out := range outs {
		res[i] = <-out
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rec = false
	return res, g.sizes
}

// burstAction returns the state machine's burst: up to 12 concurrent
// requests over the suite's keys, each key at one cost (its requests are
// alike), decided through the coalescing limiter and compared, key by
// key in order, with the same requests one by one on the reference.
// It also checks that they went as batches: per group (every key on a
// store that is one node, a slot on any other) the first two alone, then
// what queued behind them in one call (one per key, unless one node).
func burstAction(g *gate, prefix string, cur func() (want, gotC *ratekit.Limiter, v variant), keyGen *rapid.Generator[string], cost func(*rapid.T, string) int64, sync func(), check func(t *rapid.T, what, key string, d core.Decision, allowedN int64)) func(*rapid.T) {
	return func(t *rapid.T) {
		want, gotC, v := cur()
		costs := map[string]int64{}
		reqs := make([]core.Request, rapid.IntRange(2, 12).Draw(t, "burst"))
		for i := range reqs {
			k := keyGen.Draw(t, "key")
			if _, ok := costs[k]; !ok {
				costs[k] = cost(t, "n")
			}
			reqs[i] = core.Request{Key: k, N: costs[k]}
		}
		sync()
		res, sizes := burst(t, g, gotC, reqs)
		ctx := context.Background()
		for i, r := range reqs {
			what := fmt.Sprintf("burst item %d of %d: AllowN(%q, %d), coalesced", i, len(reqs), r.Key, r.N)
			dw, ew := want.AllowN(ctx, r.Key, r.N)
			compare(t, what, dw, ew, res[i].d, res[i].err)
			if ew == nil {
				check(t, what, r.Key, dw, r.N)
			}
		}
		// The calls the store saw: per group, the first requests alone
		// (as many as a group has calls in flight), then the valid ones
		// queued behind them, one call per key (one request: the single
		// script).
		const inFlight = engine.MaxInFlight
		single := g.SingleNode()
		queued := map[int]map[string]int{} // group -> key -> requests
		alone := map[int]int{}             // group -> requests sent alone
		for _, r := range reqs {
			if r.N < 1 || r.N > v.maxCost {
				continue // refused before it queues
			}
			grp := 0
			if !single {
				grp = slot.Of(keyspace.Key(prefix+v.tag, r.Key, ""))
			}
			if alone[grp] < inFlight {
				alone[grp]++
				continue
			}
			if queued[grp] == nil {
				queued[grp] = map[string]int{}
			}
			queued[grp][r.Key]++
		}
		wantCalls, batches := 0, 0
		for _, n := range alone {
			wantCalls += n
		}
		for _, byKey := range queued {
			switch {
			case single && len(byKey) > 0:
				// One node: every queued request in one call.
				n := 0
				for _, c := range byKey {
					n += c
				}
				wantCalls++
				if n > 1 {
					batches++
				}
			default:
				for _, c := range byKey {
					wantCalls++
					if c > 1 {
						batches++
					}
				}
			}
		}
		got := 0
		for _, n := range sizes {
			if n > 1 {
				got++
			}
		}
		if len(sizes) != wantCalls || got != batches {
			t.Fatalf("%s: burst %+v went as calls of %v keys; want %d calls, %d of them batches", v.desc, reqs, sizes, wantCalls, batches)
		}
	}
}
