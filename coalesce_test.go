package ratekit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/store/memory"
)

// gate is a store that, while shut, holds every call until it opens,
// after saying so on arrived. It records each call: its script's name and
// the number of its keys.
type gate struct {
	core.ScriptRunner
	mu      sync.Mutex
	shut    chan struct{} // nil while open
	arrived chan struct{}
	calls   []string
	panics  atomic.Bool // every call panics (past the gate) while set
}

func newGate(t *testing.T) *gate {
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &gate{ScriptRunner: s, arrived: make(chan struct{}, 1000)}
}

func (g *gate) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	g.mu.Lock()
	g.calls = append(g.calls, fmt.Sprintf("%s/%d", s.Name(), len(keys)))
	shut := g.shut
	g.mu.Unlock()
	if shut != nil {
		g.arrived <- struct{}{}
		<-shut
	}
	if g.panics.Load() {
		panic("the store's bug")
	}
	return g.ScriptRunner.RunScript(ctx, s, keys, args, reply)
}

// close holds the calls from now on; open lets them all through.
func (g *gate) close() {
	g.mu.Lock()
	g.shut = make(chan struct{})
	g.calls = nil
	g.mu.Unlock()
}

func (g *gate) open() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.shut)
	g.shut = nil
	return g.calls
}

func (g *gate) sent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// parked is a context that says when a call first waits on it: a
// coalesced call does only once it is in its group's queue.
type parked struct {
	context.Context
	once sync.Once
	in   chan struct{}
}

func park(ctx context.Context) *parked {
	return &parked{Context: ctx, in: make(chan struct{})}
}

func (p *parked) Done() <-chan struct{} {
	p.once.Do(func() { close(p.in) })
	return p.Context.Done()
}

// result is one call's answer, or its panic.
type result struct {
	d        core.Decision
	err      error
	panicked any
}

// start calls AllowN in a goroutine and returns once the call is held at
// the gate or waits in a queue (or has returned).
func start(t *testing.T, g *gate, lim *ratekit.Limiter, ctx context.Context, key string, n int64) chan result {
	t.Helper()
	p := park(ctx)
	out := make(chan result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				out <- result{panicked: v}
			}
		}()
		d, err := lim.AllowN(p, key, n)
		out <- result{d: d, err: err}
	}()
	select {
	case <-g.arrived:
	case <-p.in:
	case r := <-out:
		out <- r
	case <-time.After(time.Minute):
		t.Fatal("a call neither reached the store nor waited")
	}
	return out
}

func coalescing(t *testing.T, g *gate, capacity int64) *ratekit.Limiter {
	t.Helper()
	l, err := tokenbucket.New(g, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Clock: fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	return coalesce(t, l)
}

// coalesce returns ratekit.Coalesce(l), or fails t.
func coalesce(t *testing.T, l *ratekit.Limiter) *ratekit.Limiter {
	t.Helper()
	c, err := ratekit.Coalesce(l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A lone call goes alone, as the plain limiter sends it: one script call,
// never a batch.
func TestCoalesceLoneCall(t *testing.T) {
	g := newGate(t)
	lim := coalescing(t, g, 3)
	for i, want := range []string{"true 2", "true 1", "true 0", "false 0"} {
		d, err := lim.Allow(context.Background(), "k")
		if got := fmt.Sprint(d.Allowed, d.Remaining); err != nil || got != want {
			t.Fatalf("call %d: %s, %v; want %s", i, got, err, want)
		}
	}
	if got := g.sent(); fmt.Sprint(got) != "[tokenbucket/1 tokenbucket/1 tokenbucket/1 tokenbucket/1]" {
		t.Fatalf("sent %v", got)
	}
	if c, err := ratekit.Coalesce(lim); c != lim || err != nil {
		t.Fatalf("Coalesce of a coalescing limiter: %v, %v; want itself", c, err)
	}
	for name, l := range map[string]*ratekit.Limiter{"nil": nil, "zero": {}} {
		if c, err := ratekit.Coalesce(l); c != nil || !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("Coalesce of a %s Limiter: %v, %v; want ErrInvalidConfig", name, c, err)
		}
	}
}

// slotTwins returns n keys other than key whose storage keys share its
// cluster slot: calls on them share key's group (on a store that is not
// one node) without deciding on key.
func slotTwins(key string, n int) []string {
	want := slot.Of(keyspace.Key("", key, ""))
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := "twin" + strconv.Itoa(i); slot.Of(keyspace.Key("", k, "")) == want {
			out = append(out, k)
		}
	}
	return out
}

// The calls that come while two are in flight go together, in the order
// they came, as one batch script call once one returns.
func TestCoalesceQueueIsOneBatch(t *testing.T) {
	g := newGate(t)
	lim := coalescing(t, g, 4)
	ctx := context.Background()
	g.close()
	// Two calls of hot's group in flight, alone, on other keys: the batch
	// may run before or after either.
	var inFlight []chan result
	for _, k := range slotTwins("hot", 2) {
		inFlight = append(inFlight, start(t, g, lim, ctx, k, 1))
	}
	var rest []chan result
	for _, n := range []int64{1, 2, 2, 1, 1, 5} {
		rest = append(rest, start(t, g, lim, ctx, "hot", n))
	}
	g.open()
	for _, ch := range inFlight {
		if r := <-ch; r.err != nil || !r.d.Allowed || r.d.Remaining != 3 {
			t.Fatalf("a call in flight: %+v, %v", r.d, r.err)
		}
	}
	want := []string{"true 3 <nil>", "true 1 <nil>", "false 1 <nil>", "true 0 <nil>", "false 0 <nil>", "false 0 invalid cost"}
	var got []string
	for _, ch := range rest {
		r := <-ch
		e := fmt.Sprint(r.err)
		if errors.Is(r.err, core.ErrInvalidCost) {
			e = "invalid cost"
		}
		got = append(got, fmt.Sprint(r.d.Allowed, " ", r.d.Remaining, " ", e))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decisions %q\nwant      %q", got, want)
	}
	// The first two alone; the five valid ones queued behind them in one
	// batch (the invalid cost never queues).
	if calls := g.sent(); fmt.Sprint(calls) != "[tokenbucket/1 tokenbucket/1 tokenbucket/5]" {
		t.Fatalf("sent %v", calls)
	}
}

// queueBehind holds two calls of hot's group at the gate, on other keys,
// queues n calls on hot behind them, then opens the gate; it returns the
// calls' answers, the two first.
func queueBehind(t *testing.T, g *gate, lim *ratekit.Limiter, n int) []chan result {
	t.Helper()
	ctx := context.Background()
	g.close()
	var calls []chan result
	for _, k := range slotTwins("hot", 2) {
		calls = append(calls, start(t, g, lim, ctx, k, 1))
	}
	for range n {
		calls = append(calls, start(t, g, lim, ctx, "hot", 1))
	}
	g.open()
	return calls
}

// batchGate is a gate that is also a core.BatchRunner: each call of a
// RunScripts goes through the gate, one by one.
type batchGate struct{ *gate }

func (b batchGate) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply, out[i].Err = b.RunScript(ctx, c.Script, c.Keys, c.Args, nil)
	}
	return out
}

// A hot key's queue goes in one batch call, past the 64 decisions of one
// AllowMany call: its calls were made at once, and a key's requests in
// two calls would cost a round trip each.
func TestCoalesceHotKeyOneCall(t *testing.T) {
	g := newGate(t)
	l, err := tokenbucket.New(batchGate{g}, tokenbucket.Config{Capacity: 1000, RefillRate: 1, RefillInterval: time.Hour, Clock: fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range queueBehind(t, g, coalesce(t, l), 100) {
		if r := <-ch; r.err != nil || !r.d.Allowed {
			t.Fatalf("call %d: %+v, %v", i, r.d, r.err)
		}
	}
	if calls := g.sent(); fmt.Sprint(calls) != "[tokenbucket/1 tokenbucket/1 tokenbucket/100]" {
		t.Fatalf("sent %v; want the two in flight alone, then the 100 queued on one key in one call", calls)
	}
}

// A call whose context ends while it waits in the queue returns at once
// and is never sent; the others are decided without it.
func TestCoalesceCancelWhileQueued(t *testing.T) {
	g := newGate(t)
	lim := coalescing(t, g, 10)
	ctx := context.Background()
	g.close()
	var inFlight []chan result
	for _, k := range slotTwins("hot", 2) {
		inFlight = append(inFlight, start(t, g, lim, ctx, k, 1))
	}
	a := start(t, g, lim, ctx, "hot", 1)
	cctx, cancel := context.WithCancel(ctx)
	b := start(t, g, lim, cctx, "hot", 5)
	c := start(t, g, lim, ctx, "hot", 1)
	cancel()
	select {
	case r := <-b:
		if !errors.Is(r.err, core.ErrStore) || !errors.Is(r.err, context.Canceled) || r.d.Allowed {
			t.Fatalf("cancelled call: %+v, %v", r.d, r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call did not return while the gate was shut")
	}
	g.open()
	for _, ch := range inFlight {
		if r := <-ch; r.err != nil || !r.d.Allowed {
			t.Fatalf("a call in flight: %+v, %v", r.d, r.err)
		}
	}
	for i, ch := range []chan result{a, c} {
		r := <-ch
		if r.err != nil || !r.d.Allowed || r.d.Remaining != int64(9-i) {
			t.Fatalf("call %d: %+v, %v", i, r.d, r.err)
		}
	}
	if calls := g.sent(); fmt.Sprint(calls) != "[tokenbucket/1 tokenbucket/1 tokenbucket/2]" {
		t.Fatalf("sent %v", calls)
	}
	if d, err := lim.Peek(ctx, "hot"); err != nil || d.Remaining != 8 {
		t.Fatalf("Peek: %+v, %v; the cancelled cost of 5 counted?", d, err)
	}
}

// Under many goroutines, some leaving at random moments, every caller
// that stays gets its decision, and the key counts exactly the requests
// allowed to them plus at most those of the callers that left after their
// batch went out. With nobody leaving, exactly the limit passes.
func TestCoalesceContention(t *testing.T) {
	for _, leaving := range []bool{false, true} {
		t.Run(fmt.Sprint("leaving=", leaving), func(t *testing.T) {
			const (
				goroutines = 64
				perG       = 200
			)
			// Exactly the limit passes of many more requests; with callers
			// leaving, a limit never reached shows every request counted.
			limit := int64(1000)
			if leaving {
				limit = goroutines * perG * 2
			}
			s, err := memory.New(memory.WithSweepInterval(0))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st := &slow{ScriptRunner: s}
			l, err := tokenbucket.New(st, tokenbucket.Config{Capacity: limit, RefillRate: 1, RefillInterval: time.Hour, Clock: fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
			if err != nil {
				t.Fatal(err)
			}
			lim := coalesce(t, l)
			var allowed, left atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < goroutines; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for i := 0; i < perG; i++ {
						ctx, cancel := context.Background(), context.CancelFunc(func() {})
						if leaving && r.IntN(4) == 0 {
							ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(200))*time.Microsecond)
						}
						d, err := lim.AllowN(ctx, "hot", 1)
						// Its deadline passed (the timer that ends ctx may
						// not have run yet).
						dl, ok := ctx.Deadline()
						expired := ok && !time.Now().Before(dl)
						cancel()
						switch {
						case err != nil && expired && errors.Is(err, context.DeadlineExceeded) && errors.Is(err, core.ErrStore):
							left.Add(1)
						case err != nil:
							t.Errorf("a caller that stayed got %v", err)
							return
						case d.Allowed:
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			d, err := l.Peek(context.Background(), "hot")
			if err != nil {
				t.Fatal(err)
			}
			counted := limit - d.Remaining
			t.Logf("allowed %d, counted %d, left %d", allowed.Load(), counted, left.Load())
			if a := allowed.Load(); counted < a || counted > a+left.Load() {
				t.Fatalf("counted %d with %d allowed and %d callers that left", counted, a, left.Load())
			}
			if !leaving && (allowed.Load() != limit || left.Load() != 0) {
				t.Fatalf("%d allowed with a limit of %d", allowed.Load(), limit)
			}
			if st.batches.Load() == 0 {
				t.Fatal("no batch: 64 goroutines on one key never queued")
			}
		})
	}
}

// slow is a store that sleeps before each call, so that queues form, and
// counts its calls of several keys (batches).
type slow struct {
	core.ScriptRunner
	batches atomic.Int64
}

func (s *slow) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if len(keys) > 1 {
		s.batches.Add(1)
	}
	time.Sleep(20 * time.Microsecond)
	return s.ScriptRunner.RunScript(ctx, sc, keys, args, reply)
}

// A store that panics does not stall a coalescing limiter: the panic goes
// on in the caller whose goroutine made the store call, every other call
// of its batch gets an error, and the calls in flight are counted back, so
// the calls after them go out (before, two panics left every later call
// of the group waiting forever).
func TestCoalesceStorePanics(t *testing.T) {
	g := newGate(t)
	lim := coalescing(t, g, 100)
	ctx := context.Background()
	answer := func(ch chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("a call got no answer in 10 s: the group is stuck")
			panic("unreachable")
		}
	}
	g.panics.Store(true)
	for i := range 3 * engine.MaxInFlight {
		if r := answer(start(t, g, lim, ctx, "k", 1)); r.panicked == nil {
			t.Fatalf("lone call %d: %+v, want the store's panic", i, r)
		}
	}
	// A batch: two calls held at the store, three queued behind them.
	calls := queueBehind(t, g, lim, 3)
	panicked, failed := 0, 0
	for _, ch := range calls {
		switch r := answer(ch); {
		case r.panicked != nil:
			panicked++
		case errors.Is(r.err, core.ErrStore) && strings.Contains(r.err.Error(), "panicked"):
			failed++
		default:
			t.Errorf("a call: %+v", r)
		}
	}
	// The two lone calls and the batch's lead panic; the lead's two
	// companions get the error.
	if panicked != 3 || failed != 2 {
		t.Errorf("%d calls panicked and %d failed, want 3 and 2", panicked, failed)
	}
	g.panics.Store(false)
	for i := range 2 * engine.MaxInFlight {
		if r := answer(start(t, g, lim, ctx, "after", 1)); r.err != nil || !r.d.Allowed {
			t.Fatalf("call %d once the store is mended: %+v", i, r)
		}
	}
}

// A coalescing policy gathers its calls as a limiter's: two alone, then
// what queued behind them in one batch script call of every limit's key
// (and the penalty key) per request, each decided as the same requests
// one by one; OnShadowDeny is called, on each caller's goroutine, for the
// queued requests a shadow limit would have denied.
func TestCoalescePolicy(t *testing.T) {
	g := newGate(t)
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	shadowed := 0
	build := func(r core.ScriptRunner) *ratekit.Limiter {
		t.Helper()
		var ls []ratekit.Limit
		for i, capacity := range []int64{100, 4, 2} {
			l, err := tokenbucket.New(r, tokenbucket.Config{Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Prefix: fmt.Sprintf("p%d:", i), Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, ratekit.Limit{Name: fmt.Sprint("l", i), Limiter: l, Shadow: i == 2})
		}
		ls[1].Penalty = time.Minute
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: ls, OnShadowDeny: func(context.Context, string, core.Decision) {
			mu.Lock()
			shadowed++
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lim := coalesce(t, build(g))
	want := build(newStore(t, memory.WithClock(clock)))
	var got []result
	for _, ch := range queueBehind(t, g, lim, 6) {
		got = append(got, <-ch)
	}
	name := "policy:tokenbucket+tokenbucket+tokenbucket"
	if sent := g.sent(); fmt.Sprint(sent) != fmt.Sprintf("[%[1]s/4 %[1]s/4 %[1]s/24]", name) {
		t.Fatalf("sent %v; want the two in flight alone (4 keys each), then the 6 queued in one call", sent)
	}
	ctx := context.Background()
	for i, key := range append(slotTwins("hot", 2), "hot", "hot", "hot", "hot", "hot", "hot") {
		r := got[i]
		d, err := want.Allow(ctx, key)
		if r.err != nil || err != nil || !reflect.DeepEqual(r.d, d) {
			t.Fatalf("call %d on %q: %+v, %v; one by one %+v, %v", i, key, r.d, r.err, d, err)
		}
	}
	// The reference counted its own: each queued call after the second
	// on hot passes l2 no more (and the fifth is blocked by l1's
	// penalty), so the shadow limit would have denied two allowed ones.
	mu.Lock()
	defer mu.Unlock()
	if shadowed != 2*2 {
		t.Fatalf("OnShadowDeny called %d times, want 2 for the coalescing policy and 2 for the reference", shadowed)
	}
}
