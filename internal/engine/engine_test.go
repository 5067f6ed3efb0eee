package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// algorithm builds one algorithm's limiter over a runner, with a limit of 3.
type algorithm struct {
	name string
	new  func(r core.ScriptRunner) (*ratekit.Limiter, error)
}

var algorithms = []algorithm{
	{"tokenbucket", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return tokenbucket.New(r, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	}},
	{"fixedwindow", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return fixedwindow.New(r, fixedwindow.Config{Limit: 3, Window: time.Second})
	}},
	{"slidinglog", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return slidinglog.New(r, slidinglog.Config{Limit: 3, Window: time.Second})
	}},
	{"slidingcounter", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return slidingcounter.New(r, slidingcounter.Config{Limit: 3, Window: time.Second})
	}},
	{"leakybucket", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return leakybucket.New(r, leakybucket.Config{Capacity: 3, LeakRate: 1, Per: time.Second})
	}},
	{"gcra", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return gcra.New(r, gcra.Config{Rate: 1, Period: time.Second, Burst: 3})
	}},
}

// fakeRunner is a core.ScriptRunner that records its calls and answers
// every one with reply.
type fakeRunner struct {
	reply []int64

	mu      sync.Mutex
	calls   int
	scripts []string // the name of each call's script
	keys    []string // each call's first key, copied
}

func (f *fakeRunner) RunScript(_ context.Context, s *core.Script, keys []string, _ []int64, reply []int64) ([]int64, error) {
	f.record(s, keys)
	return f.answer(reply, keys), nil
}

// answer appends f.reply once per key: a batch script decides each.
func (f *fakeRunner) answer(reply []int64, keys []string) []int64 {
	for range max(len(keys), 1) {
		reply = append(reply, f.reply...)
	}
	return reply
}

func (f *fakeRunner) record(s *core.Script, keys []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.scripts = append(f.scripts, s.Name())
	if len(keys) > 0 {
		f.keys = append(f.keys, strings.Clone(keys[0]))
	}
}

func (f *fakeRunner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fakeBatch is a fakeRunner that is also a core.BatchRunner; results
// makes the answer to a batch of calls (by default, one reply per call).
type fakeBatch struct {
	*fakeRunner
	results func(calls []core.ScriptCall) []core.ScriptResult

	batches int // guarded by fakeRunner.mu
}

func (f *fakeBatch) RunScripts(_ context.Context, calls []core.ScriptCall) []core.ScriptResult {
	for _, c := range calls {
		f.record(c.Script, c.Keys)
	}
	f.mu.Lock()
	f.batches++
	f.mu.Unlock()
	if f.results != nil {
		return f.results(calls)
	}
	out := make([]core.ScriptResult, len(calls))
	for i, c := range calls {
		out[i].Reply = f.answer(nil, c.Keys)
	}
	return out
}

// namedRunner is a fakeRunner that names itself (core.StoreNamer): name,
// "" for a store that cannot run scripts.
type namedRunner struct {
	fakeRunner
	name string
}

func (n *namedRunner) StoreName() string { return n.name }

// funcRunner is a ScriptRunner of a func kind.
type funcRunner func() []int64

func (f funcRunner) RunScript(_ context.Context, _ *core.Script, _ []string, _ []int64, reply []int64) ([]int64, error) {
	return append(reply, f()...), nil
}

// allowReply is the script reply for "allowed, 2 remaining".
var allowReply = []int64{1, 2, 0, 1000}

// testSpec is the smallest algorithm: one parameter, always allowed.
var testSpec = engine.NewSpec(engine.Spec{
	Name:   "test",
	Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
	Lua:    "local function test(key, now, client_clock, n, mode, x) return 1, 0, 0, 0 end",
	Step: func(core.Tx, string, engine.Call, engine.Args) (engine.Reply, engine.State) {
		return engine.Reply{1, 0, 0, 0}, engine.State{}
	},
})

// newEngine builds an engine directly (no algorithm around it).
func newEngine(r core.ScriptRunner) error {
	l, err := testSpec.Limit("engine:test:", "", 3, []int64{7})
	if err != nil {
		return err
	}
	_, err = engine.New(engine.Config{Store: r, Limits: []engine.Limit{l}})
	return err
}

// New, and every algorithm's New, refuses a runner that cannot run
// scripts, as the store contract has a store say so (core/store.go: nil,
// or a StoreName of ""), with an error wrapping core.ErrInvalidConfig,
// and accepts a usable one. (A nil pointer of a store type that does not
// name itself cannot be told from a usable one without reflection, which
// the contract leaves out.)
func TestNewRefusesUnusableRunner(t *testing.T) {
	bad := []struct {
		name   string
		runner core.ScriptRunner
	}{
		{"nil", nil},
		{"typed nil *memory.Store", (*memory.Store)(nil)},
		{"zero memory.Store", &memory.Store{}},
		{"a store whose StoreName is empty", &namedRunner{}},
	}
	constructors := append([]algorithm{{"engine.New", func(r core.ScriptRunner) (*ratekit.Limiter, error) {
		return nil, newEngine(r)
	}}}, algorithms...)
	for _, c := range constructors {
		for _, b := range bad {
			t.Run(c.name+"/"+b.name, func(t *testing.T) {
				l, err := c.new(b.runner)
				if !errors.Is(err, core.ErrInvalidConfig) || l != nil {
					t.Fatalf("New(%s) = %v, %v, want an error wrapping core.ErrInvalidConfig", b.name, l, err)
				}
			})
		}
		// The same constructors accept usable runners: the refusals above
		// come from the runner, not from the configuration.
		store, err := memory.New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		good := []core.ScriptRunner{&fakeRunner{}, &namedRunner{name: "fake"}, funcRunner(func() []int64 { return allowReply }), store}
		for _, r := range good {
			if _, err := c.new(r); err != nil {
				t.Errorf("%s over a usable %T: %v", c.name, r, err)
			}
		}
	}
}

// valueRunner is a runner by value whose type is not comparable.
type valueRunner struct{ seen []string }

func (v valueRunner) RunScript(_ context.Context, _ *core.Script, _ []string, _ []int64, reply []int64) ([]int64, error) {
	return append(reply, allowReply...), nil
}

// A limiter is built over a store value that cannot be compared without a
// panic, and decides.
func TestNonComparableStore(t *testing.T) {
	for _, a := range algorithms {
		l, err := a.new(valueRunner{seen: []string{"x"}})
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if d, err := l.Allow(context.Background(), "k"); err != nil || !d.Allowed {
			t.Fatalf("%s: Allow = %+v, %v", a.name, d, err)
		}
	}
}

// keeper keeps every key it is given, copied, as the store contract
// (core.ScriptRunner) has a store do: keys are the caller's only during
// the call. It holds the memory store in a field, so that every decision
// reaches its RunScript.
type keeper struct {
	s    *memory.Store
	kept []string
}

func (k *keeper) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	for _, key := range keys {
		k.kept = append(k.kept, strings.Clone(key))
	}
	return k.s.RunScript(ctx, s, keys, args, reply)
}

// Limiters build keys in memory they reuse: each call still names its own
// key, whatever the calls before it named.
func TestEachCallNamesItsKey(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.name, func(t *testing.T) {
			store, err := memory.New()
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			k := &keeper{s: store}
			l, err := a.new(k)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Many calls, so that buffers are reused whatever sync.Pool
			// does (under -race it drops some of what it is given).
			users := []string{"alice", "bobby"}
			var want []string
			for i := 0; i < 200; i++ {
				u := users[i%2]
				var err error
				if i%3 == 2 {
					_, err = l.Peek(ctx, u)
				} else {
					_, err = l.Allow(ctx, u)
				}
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, "{"+u+"}")
			}
			if len(k.kept) != len(want) {
				t.Fatalf("%d keys kept for %d calls", len(k.kept), len(want))
			}
			for i, key := range k.kept {
				if !strings.HasSuffix(key, want[i]) {
					t.Fatalf("call %d was given %q, a key that does not end in %q", i, key, want[i])
				}
			}
		})
	}
}

// ended returns a context that has ended with cause.
func ended(cause error) context.Context {
	if cause == context.DeadlineExceeded {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		_ = cancel // the deadline has passed: the context is done already
		return ctx
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A call whose context has already ended reaches no runner: AllowN, Peek,
// Refund, Reset, AllowMany and GCRA's AllowAtMost return errors wrapping
// core.ErrStore and the context's error, and the runner sees nothing.
func TestEndedContextReachesNoRunner(t *testing.T) {
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		for _, batch := range []bool{false, true} {
			for _, a := range algorithms {
				t.Run(fmt.Sprintf("%v/batch=%v/%s", cause, batch, a.name), func(t *testing.T) {
					f := &fakeRunner{reply: allowReply}
					var r core.ScriptRunner = f
					if batch {
						r = &fakeBatch{fakeRunner: f}
					}
					l, err := a.new(r)
					if err != nil {
						t.Fatal(err)
					}
					ctx := ended(cause)
					check := func(what string, err error) {
						t.Helper()
						if !errors.Is(err, core.ErrStore) || !errors.Is(err, cause) {
							t.Errorf("%s = %v, want an error wrapping core.ErrStore and %v", what, err, cause)
						}
					}
					d, err := l.AllowN(ctx, "k", 1)
					check("AllowN", err)
					if d.Allowed {
						t.Errorf("AllowN allowed with an ended context: %+v", d)
					}
					_, err = l.Allow(ctx, "k")
					check("Allow", err)
					_, err = l.Peek(ctx, "k")
					check("Peek", err)
					_, err = l.Refund(ctx, "k", 1)
					check("Refund", err)
					check("Reset", l.Reset(ctx, "k"))
					res := l.AllowMany(ctx, []core.Request{{Key: "k", N: 1}, {Key: "j", N: 2}})
					if len(res) != 2 {
						t.Fatalf("AllowMany returned %d results for 2 requests", len(res))
					}
					for i, r := range res {
						check(fmt.Sprintf("AllowMany result %d", i), r.Err)
						if r.Decision.Allowed {
							t.Errorf("AllowMany result %d allowed with an ended context", i)
						}
					}
					if a.name == "gcra" {
						_, _, err := l.AllowAtMost(ctx, "k", 2)
						check("AllowAtMost", err)
					}
					if n := f.count(); n != 0 {
						t.Fatalf("the runner saw %d calls (%q) after the context ended", n, f.scripts)
					}
					// The same limiter reaches the runner with a live context:
					// the zero above is not a runner that is never called.
					if _, err := l.Allow(context.Background(), "k"); err != nil {
						t.Fatal(err)
					}
					if f.count() == 0 {
						t.Fatal("the runner saw no call with a live context")
					}
				})
			}
		}
	}
}

// A BatchRunner that answers a batch with too few or too many results
// cannot be trusted on any of them: every result carries an error wrapping
// core.ErrStore and core.ErrUnexpectedReply, none reads as a plain denial.
func TestBatchOfWrongLength(t *testing.T) {
	// Each result the runner gives is a well-formed denial, so that a
	// result decoded from it would read "denied, no error".
	denied := []int64{0, 0, 500, 1000}
	lengths := []struct {
		name  string
		count func(n int) int
	}{
		{"none", func(int) int { return 0 }},
		{"one too few", func(n int) int { return n - 1 }},
		{"one too many", func(n int) int { return n + 1 }},
		{"twice as many", func(n int) int { return 2 * n }},
	}
	for _, a := range algorithms {
		for _, ln := range lengths {
			t.Run(a.name+"/"+ln.name, func(t *testing.T) {
				f := &fakeBatch{fakeRunner: &fakeRunner{reply: denied}, results: func(calls []core.ScriptCall) []core.ScriptResult {
					out := make([]core.ScriptResult, ln.count(len(calls)))
					for i := range out {
						out[i].Reply = append([]int64(nil), denied...)
					}
					return out
				}}
				l, err := a.new(f)
				if err != nil {
					t.Fatal(err)
				}
				reqs := []core.Request{{Key: "a", N: 1}, {Key: "b", N: 1}, {Key: "a", N: 2}}
				res := l.AllowMany(context.Background(), reqs)
				if len(res) != len(reqs) {
					t.Fatalf("AllowMany returned %d results for %d requests", len(res), len(reqs))
				}
				if f.batches != 1 {
					t.Fatalf("%d batches sent, want 1", f.batches)
				}
				for i, r := range res {
					if r.Err == nil {
						t.Errorf("result %d reads as %+v with no error", i, r.Decision)
						continue
					}
					if !errors.Is(r.Err, core.ErrStore) || !errors.Is(r.Err, core.ErrUnexpectedReply) {
						t.Errorf("result %d: %v, want an error wrapping core.ErrStore and core.ErrUnexpectedReply", i, r.Err)
					}
					if r.Decision.Allowed {
						t.Errorf("result %d allowed with an error", i)
					}
				}
			})
		}
		// The right number of the same results decodes: the errors above
		// come from the count alone.
		f := &fakeBatch{fakeRunner: &fakeRunner{reply: denied}}
		l, err := a.new(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range l.AllowMany(context.Background(), []core.Request{{Key: "a", N: 1}, {Key: "b", N: 1}}) {
			if r.Err != nil || r.Decision.Allowed || r.Decision.RetryAfter != 500*time.Microsecond {
				t.Errorf("%s: result %d of a well-sized batch: %+v, %v", a.name, i, r.Decision, r.Err)
			}
		}
	}
}

// The corrupt-state reply {-1, 0, 0, 0} is an error wrapping
// core.ErrCorruptState (not core.ErrStore) that names the script and the
// key, on AllowN, Peek and AllowMany, over a plain runner and a batch one.
func TestCorruptStateReply(t *testing.T) {
	corrupt := []int64{-1, 0, 0, 0}
	const key = "user:corrupt-42"
	for _, batch := range []bool{false, true} {
		for _, a := range algorithms {
			t.Run(fmt.Sprintf("batch=%v/%s", batch, a.name), func(t *testing.T) {
				f := &fakeRunner{reply: corrupt}
				var r core.ScriptRunner = f
				if batch {
					r = &fakeBatch{fakeRunner: f}
				}
				l, err := a.new(r)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				check := func(what string, d core.Decision, err error) {
					t.Helper()
					f.mu.Lock()
					script, _, _ := strings.Cut(f.scripts[len(f.scripts)-1], ":") // the algorithm of a batch script too
					f.mu.Unlock()
					switch {
					case !errors.Is(err, core.ErrCorruptState):
						t.Errorf("%s = %+v, %v; want an error wrapping core.ErrCorruptState", what, d, err)
					case errors.Is(err, core.ErrStore):
						t.Errorf("%s = %v: corrupt state is not a store failure", what, err)
					case !strings.Contains(err.Error(), script):
						t.Errorf("%s = %v: does not name the script %q", what, err, script)
					case !strings.Contains(err.Error(), strconv.Quote(key)):
						t.Errorf("%s = %v: does not name the key %q", what, err, key)
					case d.Allowed:
						t.Errorf("%s allowed on corrupt state", what)
					}
				}
				d, err := l.AllowN(ctx, key, 1)
				check("AllowN", d, err)
				d, err = l.Peek(ctx, key)
				check("Peek", d, err)
				res := l.AllowMany(ctx, []core.Request{{Key: key, N: 1}, {Key: key, N: 3}})
				if len(res) != 2 {
					t.Fatalf("AllowMany returned %d results for 2 requests", len(res))
				}
				for i, r := range res {
					check(fmt.Sprintf("AllowMany result %d", i), r.Decision, r.Err)
				}
				if a.name == "gcra" {
					granted, d, err := l.AllowAtMost(ctx, key, 2)
					check("AllowAtMost", d, err)
					if granted != 0 {
						t.Errorf("AllowAtMost granted %d on corrupt state", granted)
					}
				}
				want := 3 // AllowN, Peek, one batch script for AllowMany's two requests on one key
				if a.name == "gcra" {
					want++ // AllowAtMost
				}
				if n := f.count(); n != want {
					t.Errorf("the runner saw %d calls, want %d", n, want)
				}
			})
		}
	}
}

// AllowAtMost is GCRA's alone (engine.Spec.AtMost): on every other
// algorithm, and on a policy, it returns an error wrapping
// errors.ErrUnsupported, before any check and without a store call.
func TestAllowAtMostUnsupported(t *testing.T) {
	for _, a := range algorithms {
		f := &fakeRunner{reply: allowReply}
		l, err := a.new(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "only", Limiter: l}}})
		if err != nil {
			t.Fatal(err)
		}
		for name, l := range map[string]*ratekit.Limiter{a.name: l, "a policy of " + a.name: p} {
			for _, ctx := range []context.Context{context.Background(), ended(context.Canceled)} {
				granted, d, err := l.AllowAtMost(ctx, "k", 2)
				switch {
				case a.name == "gcra" && name == a.name:
					if ctx.Err() == nil && (err != nil || granted != allowReply[0] || !d.Allowed) { // the fake grants what it replies
						t.Errorf("%s: AllowAtMost = %d, %+v, %v", name, granted, d, err)
					}
				case !errors.Is(err, errors.ErrUnsupported) || granted != 0 || !reflect.DeepEqual(d, core.Decision{}):
					t.Errorf("%s: AllowAtMost = %d, %+v, %v; want an error wrapping errors.ErrUnsupported", name, granted, d, err)
				}
			}
		}
		want := 0
		if a.name == "gcra" {
			want = 1
		}
		if n := f.count(); n != want {
			t.Errorf("%s: the runner saw %d calls (%q), want %d", a.name, n, f.scripts, want)
		}
	}
}

// TestModeOf checks the mode of each of core's Ops, which DecideRequest
// reads without a call, and that any other Op is refused.
func TestModeOf(t *testing.T) {
	for _, tt := range []struct {
		op   core.Op
		want engine.Mode
	}{{core.OpAllow, engine.ModeAllow}, {core.OpPeek, engine.ModePeek}, {core.OpRefund, engine.ModeRefund}} {
		if got, err := engine.ModeOf(tt.op); got != tt.want || err != nil {
			t.Errorf("ModeOf(%v) = %v, %v; want %v", tt.op, got, err, tt.want)
		}
	}
	for _, op := range []core.Op{core.OpRefund + 1, 255} {
		if _, err := engine.ModeOf(op); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("ModeOf(%v) = %v; want ErrInvalidConfig", op, err)
		}
	}
}
