package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ratekit/ratekit/core"
)

// gated is a Client whose every send, Do or DoMulti, waits at a gate the
// test opens: each send announces its size on entered, then takes one
// value from gate (or passes at once once gate is closed). A command
// replies its arguments, or fails when its first key is in fail.
type gated struct {
	entered chan int
	gate    chan struct{}
	fail    map[string]bool
	panics  map[string]bool // a command on such a first key panics
	mu      sync.Mutex
	sends   [][]string // the first key of each command, per send
	// unloaded makes EVALSHA answer NOSCRIPT until an EVAL has run.
	unloaded bool
}

func newGated() *gated {
	return &gated{entered: make(chan int, 100), gate: make(chan struct{}), fail: map[string]bool{}, panics: map[string]bool{}}
}

func (g *gated) send(cmds []Cmd) {
	keys := make([]string, len(cmds))
	for i, c := range cmds {
		keys[i] = c.Keys[0]
	}
	g.mu.Lock()
	g.sends = append(g.sends, keys)
	g.mu.Unlock()
	g.entered <- len(cmds)
	<-g.gate
}

func (g *gated) run(c Cmd, reply []int64) ([]int64, error) {
	if g.fail[c.Keys[0]] {
		return nil, errors.New("WRONGTYPE " + c.Keys[0])
	}
	if g.panics[c.Keys[0]] {
		panic("the client's bug on " + c.Keys[0])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case c.Name == Eval:
		g.unloaded = false
	case g.unloaded:
		return nil, errors.New("NOSCRIPT No matching script. Please use EVAL.")
	}
	return append(reply, c.Args...), nil
}

func (g *gated) Do(_ context.Context, c Cmd, reply []int64) ([]int64, error) {
	g.send([]Cmd{c})
	return g.run(c, reply)
}

func (g *gated) DoMulti(_ context.Context, cmds []Cmd, out []core.ScriptResult) {
	g.send(cmds)
	for i, c := range cmds {
		out[i].Reply, out[i].Err = g.run(c, out[i].Reply)
	}
}

// sent returns the first keys of the commands of each send, in order
// within none (the queue's order is the callers' race).
func (g *gated) sent() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([][]string, len(g.sends))
	for i, s := range g.sends {
		out[i] = slices.Clone(s)
		sort.Strings(out[i])
	}
	return out
}

// waitQueued waits until p's queue holds n calls.
func waitQueued(t *testing.T, p *pipe, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got := p.line.Queued()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", got, n)
		}
	}
}

// entered waits for the next send to begin and returns its size.
func (g *gated) next(t *testing.T) int {
	t.Helper()
	select {
	case n := <-g.entered:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no send began")
		return 0
	}
}

type outcome struct {
	reply []int64
	err   error
}

// call runs RunScript on key with argument arg in a goroutine; its
// outcome arrives on the returned channel.
func call(ctx context.Context, r *Runner, wg *sync.WaitGroup, key string, arg int64) <-chan outcome {
	ch := make(chan outcome, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		reply, err := r.RunScript(ctx, rw, []string{key}, []int64{arg}, make([]int64, 0, 4))
		ch <- outcome{reply, err}
	}()
	return ch
}

func TestPipeLoneCallGoesAlone(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := newFake()
	r := newRunner(t, newPipe(f, 1))
	for i := range 3 {
		got, err := r.RunScript(context.Background(), rw, []string{"k"}, []int64{int64(i)}, nil)
		if err != nil || fmt.Sprint(got) != fmt.Sprint([]int64{1, int64(i)}) {
			t.Fatalf("call %d: %v, %v", i, got, err)
		}
	}
	if f.multi != 0 || len(f.sent) != 4 { // EVALSHA, EVAL (NOSCRIPT), then EVALSHA twice
		t.Errorf("lone calls sent %v in %d pipelines; want each alone", f.sent, f.multi)
	}
}

func TestPipeSendsWhatQueuedInOnePipeline(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	g.fail["bad"] = true
	r := newRunner(t, newPipe(g, 1))
	ctx := context.Background()
	var wg sync.WaitGroup
	first := call(ctx, r, &wg, "a", 100)
	if n := g.next(t); n != 1 {
		t.Fatalf("the lone call went in a send of %d", n)
	}
	keys := []string{"b0", "b1", "bad", "b3", "b4"}
	outs := make([]<-chan outcome, len(keys))
	for i, k := range keys {
		outs[i] = call(ctx, r, &wg, k, int64(i))
	}
	waitQueued(t, r.c.(*pipe), len(keys))
	g.gate <- struct{}{}
	if n := g.next(t); n != len(keys) {
		t.Fatalf("the queue went in a send of %d, want %d", n, len(keys))
	}
	g.gate <- struct{}{}
	if o := <-first; o.err != nil || fmt.Sprint(o.reply) != "[100]" {
		t.Errorf("the lone call: %v, %v", o.reply, o.err)
	}
	for i, k := range keys {
		o := <-outs[i]
		if k == "bad" {
			if !errors.Is(o.err, core.ErrStore) || !strings.Contains(fmt.Sprint(o.err), "WRONGTYPE bad") {
				t.Errorf("%s: %v, want its own WRONGTYPE", k, o.err)
			}
			continue
		}
		if o.err != nil || fmt.Sprint(o.reply) != fmt.Sprintf("[%d]", i) {
			t.Errorf("%s: %v, %v; want [%d]", k, o.reply, o.err, i)
		}
	}
	wg.Wait()
	if got, want := fmt.Sprint(g.sent()), "[[a] [b0 b1 b3 b4 bad]]"; got != want {
		t.Errorf("sends %s, want %s", got, want)
	}
}

func TestPipeLimitInFlight(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	r := newRunner(t, newPipe(g, 2))
	var wg sync.WaitGroup
	ctx := context.Background()
	a, b := call(ctx, r, &wg, "a", 1), call(ctx, r, &wg, "b", 2)
	g.next(t)
	g.next(t) // two alone, both in flight
	c := call(ctx, r, &wg, "c", 3)
	waitQueued(t, r.c.(*pipe), 1)
	close(g.gate)
	for _, ch := range []<-chan outcome{a, b, c} {
		if o := <-ch; o.err != nil {
			t.Error(o.err)
		}
	}
	wg.Wait()
	if got := len(g.sent()); got != 3 {
		t.Errorf("%d sends, want 3", got)
	}
}

func TestPipeCallerLeavingWhileQueued(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	r := newRunner(t, newPipe(g, 1))
	var wg sync.WaitGroup
	bg := context.Background()
	a := call(bg, r, &wg, "a", 1)
	g.next(t)
	ctx, cancel := context.WithCancel(bg)
	left := call(ctx, r, &wg, "left", 2)
	c := call(bg, r, &wg, "c", 3)
	waitQueued(t, r.c.(*pipe), 2)
	cancel()
	if o := <-left; !errors.Is(o.err, core.ErrStore) || !errors.Is(o.err, context.Canceled) {
		t.Errorf("the caller that left: %v, want core.ErrStore and context.Canceled", o.err)
	}
	close(g.gate)
	for _, ch := range []<-chan outcome{a, c} {
		if o := <-ch; o.err != nil {
			t.Error(o.err)
		}
	}
	wg.Wait()
	if got, want := fmt.Sprint(g.sent()), "[[a] [c]]"; got != want {
		t.Errorf("sends %s, want %s: a caller that left while queued sends nothing", got, want)
	}
}

func TestPipeCallerLeavingWhileSent(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	r := newRunner(t, newPipe(g, 1))
	var wg sync.WaitGroup
	bg := context.Background()
	a := call(bg, r, &wg, "a", 1)
	g.next(t)
	ctx, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	b := call(bg, r, &wg, "b", 2)
	waitQueued(t, r.c.(*pipe), 1)
	left := call(ctx, r, &wg, "left", 3)
	waitQueued(t, r.c.(*pipe), 2)
	g.gate <- struct{}{}
	if n := g.next(t); n != 2 {
		t.Fatalf("a send of %d, want 2", n)
	}
	cancel() // while its pipeline is out
	if o := <-left; !errors.Is(o.err, core.ErrStore) || !errors.Is(o.err, context.Canceled) {
		t.Errorf("the caller that left: %v, want core.ErrStore and context.Canceled", o.err)
	}
	close(g.gate)
	for _, ch := range []<-chan outcome{a, b} {
		if o := <-ch; o.err != nil {
			t.Error(o.err)
		}
	}
	wg.Wait()
}

// A pipeline of commands that meet NOSCRIPT: each is sent again as EVAL,
// through the Pipe again, and every caller gets its own reply.
func TestPipeNoScriptEachFallsBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	g.unloaded = true
	r := newRunner(t, newPipe(g, 1))
	ctx := context.Background()
	var wg sync.WaitGroup
	outs := []<-chan outcome{call(ctx, r, &wg, "a", 0)}
	g.next(t)
	for i := 1; i <= 4; i++ {
		outs = append(outs, call(ctx, r, &wg, "b"+fmt.Sprint(i), int64(i)))
	}
	waitQueued(t, r.c.(*pipe), 4)
	close(g.gate)
	for i, ch := range outs {
		if o := <-ch; o.err != nil || fmt.Sprint(o.reply) != fmt.Sprintf("[%d]", i) {
			t.Errorf("call %d: %v, %v", i, o.reply, o.err)
		}
	}
	wg.Wait()
	if s := g.sent(); len(s) < 3 || len(s[1]) != 4 {
		t.Errorf("sends %v: want the lone EVALSHA, the 4 queued in one pipeline, then EVALs", s)
	}
}

// lockedFake is a fake safe for concurrent use.
type lockedFake struct {
	mu sync.Mutex
	*fake
}

func (f *lockedFake) Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	time.Sleep(10 * time.Microsecond) // a round trip, for others to queue
	return f.fake.Do(ctx, c, reply)
}

func (f *lockedFake) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fake.DoMulti(ctx, cmds, out)
}

// Many callers, some leaving at random moments: each call that returns a
// reply gets its own, and every call returns.
func TestPipeManyCallersLeaving(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := &lockedFake{fake: newFake()}
	r := newRunner(t, newPipe(f, 2))
	var wg sync.WaitGroup
	var ok, left atomic.Int64
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 200 {
				arg := int64(w*1000 + i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(200))*time.Microsecond)
				got, err := r.RunScript(ctx, rw, []string{"k"}, []int64{arg}, nil)
				cancel()
				switch {
				case err == nil:
					if fmt.Sprint(got) != fmt.Sprintf("[1 %d]", arg) {
						t.Errorf("call %d got %v", arg, got)
					}
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded) && errors.Is(err, core.ErrStore):
					left.Add(1)
				default:
					t.Errorf("call %d: %v", arg, err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d replies, %d left", ok.Load(), left.Load())
}

// A client that panics does not stall the Pipe: the panic goes on in the
// caller whose goroutine sent, the other calls of its pipeline get an
// error, and the calls in flight are counted back.
func TestPipeClientPanics(t *testing.T) {
	defer goleak.VerifyNone(t)
	g := newGated()
	g.panics["boom"] = true
	r := newRunner(t, newPipe(g, 1))
	ctx := context.Background()
	var wg sync.WaitGroup
	run := func(key string) <-chan outcome {
		ch := make(chan outcome, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					ch <- outcome{err: fmt.Errorf("panicked: %v", v)}
				}
			}()
			reply, err := r.RunScript(ctx, rw, []string{key}, []int64{1}, nil)
			ch <- outcome{reply, err}
		}()
		return ch
	}
	lone := run("boom")
	g.next(t)
	queued := []<-chan outcome{run("a"), run("boom"), run("b")}
	waitQueued(t, r.c.(*pipe), len(queued))
	close(g.gate)
	panicked, failed := 0, 0
	answer := func(ch <-chan outcome) outcome {
		select {
		case o := <-ch:
			return o
		case <-time.After(10 * time.Second):
			t.Fatal("a call got no answer in 10 s: the Pipe is stuck")
			panic("unreachable")
		}
	}
	for _, ch := range append(queued, lone) {
		switch o := answer(ch); {
		case strings.HasPrefix(fmt.Sprint(o.err), "panicked: the client's bug"):
			panicked++
		case errors.Is(o.err, core.ErrStore) && strings.Contains(o.err.Error(), "panicked"):
			failed++
		default:
			t.Errorf("a call: %v, %v", o.reply, o.err)
		}
	}
	// The lone call and the pipeline's lead panic; the lead's companions
	// get the error.
	if panicked != 2 || failed != 2 {
		t.Errorf("%d calls panicked and %d failed, want 2 and 2", panicked, failed)
	}
	for i := range 3 {
		if o := answer(run("after")); o.err != nil {
			t.Fatalf("call %d after the panics: %v", i, o.err)
		}
	}
	wg.Wait()
}
