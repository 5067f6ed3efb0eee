package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/slot"
)

// fake is a Client over a map of scripts the "server" knows, by SHA1. A
// known script replies {len(keys), args...}; EVAL loads it.
type fake struct {
	known   map[string]bool
	old     bool     // when set, the server lacks EVALSHA_RO and EVAL_RO
	sent    []string // each command, "NAME script"
	ran     []string // each command that ran, "script keys"
	multi   int      // DoMulti calls
	err     error    // when set, every command fails with it
	onMulti func()   // when set, called after each DoMulti
	// libs holds the functions the server knows, by name; nil when the
	// server has no functions (FCALL is an unknown command).
	libs map[string]bool
}

func (f *fake) run(c Cmd, reply []int64) ([]int64, error) {
	f.sent = append(f.sent, c.Name.String()+" "+c.Script.Name())
	if f.err != nil {
		return nil, f.err
	}
	if f.old && c.Name.ReadOnly() || f.libs == nil && c.Name.function() {
		return nil, unknownCommand(c)
	}
	switch c.Name {
	case FCall, FCallRO:
		if !f.libs[c.Payload()] {
			return nil, errors.New("ERR Function not found")
		}
	case EvalSHA, EvalSHARO:
		if !f.known[c.Payload()] {
			return nil, errors.New("NOSCRIPT No matching script. Please use EVAL.")
		}
	default:
		f.known[c.Script.SHA1()] = true
	}
	f.ran = append(f.ran, fmt.Sprint(c.Script.Name(), c.Keys))
	reply = append(reply, int64(len(c.Keys)))
	return append(reply, c.Args...), nil
}

func (f *fake) Do(_ context.Context, c Cmd, reply []int64) ([]int64, error) { return f.run(c, reply) }

func (f *fake) DoMulti(_ context.Context, cmds []Cmd, out []core.ScriptResult) {
	f.multi++
	for i, c := range cmds {
		out[i].Reply, out[i].Err = f.run(c, out[i].Reply)
	}
	if f.onMulti != nil {
		f.onMulti()
	}
}

func newFake() *fake { return &fake{known: map[string]bool{}} }

// unknownCommand is what Redis 6.0 answers to an EVALSHA_RO.
func unknownCommand(c Cmd) error {
	return fmt.Errorf("ERR unknown command `%s`, with args beginning with: `%s`, `%d`, ", c.Name, c.Payload(), len(c.Keys))
}

var (
	rw = core.NewScript("rw", "return {1}", nil, false)
	ro = core.NewScript("ro", "return {2}", nil, true)
)

func TestNames(t *testing.T) {
	for n, want := range map[Name]string{EvalSHA: "EVALSHA evalsha false", EvalSHARO: "EVALSHA_RO evalsha_ro true", Eval: "EVAL eval false", EvalRO: "EVAL_RO eval_ro true", FCall: "FCALL fcall false", FCallRO: "FCALL_RO fcall_ro true"} {
		if got := fmt.Sprint(n.String(), " ", n.Lower(), " ", n.ReadOnly()); got != want {
			t.Errorf("%d: %s, want %s", n, got, want)
		}
	}
	if p := (Cmd{Name: EvalSHARO, Script: ro}).Payload(); p != ro.SHA1() {
		t.Errorf("EVALSHA_RO payload %q", p)
	}
	if p := (Cmd{Name: EvalRO, Script: ro}).Payload(); p != ro.Lua() {
		t.Errorf("EVAL_RO payload %q", p)
	}
}

func TestRunScriptFallsBackToEval(t *testing.T) {
	for _, plainRO := range []bool{false, true} {
		f := newFake()
		r := newRunner(t, f, plain(plainRO)...)
		for i := 0; i < 2; i++ {
			for _, s := range []*core.Script{rw, ro} {
				got, err := r.RunScript(context.Background(), s, []string{"k"}, []int64{7}, nil)
				if err != nil || fmt.Sprint(got) != "[1 7]" {
					t.Fatalf("%s: %v, %v", s.Name(), got, err)
				}
			}
		}
		want := "[EVALSHA rw EVAL rw EVALSHA_RO ro EVAL_RO ro EVALSHA rw EVALSHA_RO ro]"
		if plainRO {
			want = "[EVALSHA rw EVAL rw EVALSHA ro EVAL ro EVALSHA rw EVALSHA ro]"
		}
		if fmt.Sprint(f.sent) != want {
			t.Errorf("plainRO %v: sent %v, want %v", plainRO, f.sent, want)
		}
	}
}

// A server without EVALSHA_RO (Redis before 7.0) gets the call that met
// its refusal again as EVALSHA, and every later read-only call of the
// store as EVALSHA and EVAL from the start; another store asks again.
func TestReadOnlyFallsBackOncePerStore(t *testing.T) {
	f := newFake()
	f.old = true
	r := newRunner(t, f)
	for i := 0; i < 3; i++ {
		for _, s := range []*core.Script{ro, rw} {
			got, err := r.RunScript(context.Background(), s, []string{"k"}, []int64{7}, nil)
			if err != nil || fmt.Sprint(got) != "[1 7]" {
				t.Fatalf("%s, call %d: %v, %v", s.Name(), i, got, err)
			}
		}
	}
	want := "[EVALSHA_RO ro EVALSHA ro EVAL ro EVALSHA rw EVAL rw EVALSHA ro EVALSHA rw EVALSHA ro EVALSHA rw]"
	if fmt.Sprint(f.sent) != want {
		t.Errorf("sent %v, want %v", f.sent, want)
	}
	// A batch after it sends EVALSHA at once: one DoMulti.
	f.multi = 0
	for _, res := range r.RunScripts(context.Background(), []core.ScriptCall{{Script: ro, Keys: []string{"{a}"}}, {Script: ro, Keys: []string{"{b}"}}}) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if f.multi != 1 {
		t.Errorf("%d DoMulti after the fallback, want 1", f.multi)
	}

	// The script is known: EVALSHA_RO, then EVALSHA, and no EVAL.
	g := newFake()
	g.old, g.known[ro.SHA1()] = true, true
	if _, err := newRunner(t, g).RunScript(context.Background(), ro, nil, nil, nil); err != nil || fmt.Sprint(g.sent) != "[EVALSHA_RO ro EVALSHA ro]" {
		t.Errorf("a loaded script: %v; sent %v", err, g.sent)
	}
	// The context ends with the refusal: nothing more is sent.
	h := newFake()
	h.old = true
	ctx, cancel := context.WithCancel(context.Background())
	_, err := newRunner(t, cancelling{h, cancel}).RunScript(ctx, ro, nil, nil, nil)
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) || fmt.Sprint(h.sent) != "[EVALSHA_RO ro]" {
		t.Errorf("context ended at the refusal: %v; sent %v", err, h.sent)
	}
}

// cancelling is a Client that cancels a context after each command.
type cancelling struct {
	*fake
	cancel func()
}

func (c cancelling) Do(ctx context.Context, cmd Cmd, reply []int64) ([]int64, error) {
	defer c.cancel()
	return c.fake.Do(ctx, cmd, reply)
}

// In a batch, the read-only calls refused for lack of EVALSHA_RO go again
// in one DoMulti of EVALSHA, those that then meet NOSCRIPT in one of EVAL.
func TestRunScriptsReadOnlyFallback(t *testing.T) {
	f := newFake()
	f.old = true
	f.known[rw.SHA1()] = true
	r := newRunner(t, f)
	calls := []core.ScriptCall{
		{Script: ro, Keys: []string{"{a}"}, Args: []int64{1}},
		{Script: rw, Keys: []string{"{b}"}, Args: []int64{2}},
		{Script: ro, Keys: []string{"{c}"}, Args: []int64{3}},
	}
	for i, res := range r.RunScripts(context.Background(), calls) {
		if want := fmt.Sprint([]int64{1, calls[i].Args[0]}); res.Err != nil || fmt.Sprint(res.Reply) != want {
			t.Errorf("call %d: %v, %v; want %s", i, res.Reply, res.Err, want)
		}
	}
	want := "[EVALSHA_RO ro EVALSHA rw EVALSHA_RO ro EVALSHA ro EVALSHA ro EVAL ro EVAL ro]"
	if f.multi != 3 || fmt.Sprint(f.sent) != want {
		t.Errorf("%d DoMulti, sent %v; want 3, %s", f.multi, f.sent, want)
	}
}

// cluster is a Client of two nodes, by first key: "{new}..." on a server
// with EVALSHA_RO, any other on one without. Safe for concurrent use.
type cluster struct {
	mu       sync.Mutex
	old, new *fake
}

func (c *cluster) node(cmd Cmd) *fake {
	if len(cmd.Keys) > 0 && strings.HasPrefix(cmd.Keys[0], "{new}") {
		return c.new
	}
	return c.old
}

func (c *cluster) Do(_ context.Context, cmd Cmd, reply []int64) ([]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node(cmd).run(cmd, reply)
}

func (c *cluster) DoMulti(_ context.Context, cmds []Cmd, out []core.ScriptResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cmd := range cmds {
		out[i].Reply, out[i].Err = c.node(cmd).run(cmd, out[i].Reply)
	}
}

// On a cluster whose nodes differ, the read-only calls use EVALSHA_RO
// until one node refuses it, and plain EVALSHA on every node after; calls
// racing with the refusal each fall back once and all succeed.
func TestReadOnlyFallbackOnMixedCluster(t *testing.T) {
	c := &cluster{old: newFake(), new: newFake()}
	c.old.old = true
	c.old.known[ro.SHA1()], c.new.known[ro.SHA1()] = true, true
	r := newRunner(t, newPipe(c, 2))
	ctx := context.Background()
	if _, err := r.RunScript(ctx, ro, []string{"{new}1"}, nil, nil); err != nil || fmt.Sprint(c.new.sent) != "[EVALSHA_RO ro]" {
		t.Fatalf("the new node: %v, sent %v", err, c.new.sent)
	}
	const goroutines, calls = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				key := fmt.Sprintf("{old}%d", i)
				if i%2 == 1 {
					key = fmt.Sprintf("{new}%d", i)
				}
				if _, err := r.RunScript(ctx, ro, []string{key}, nil, nil); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	refused := 0
	for _, s := range c.old.sent {
		if s == "EVALSHA_RO ro" {
			refused++
		}
	}
	if refused == 0 || refused > goroutines {
		t.Errorf("the old node refused %d EVALSHA_RO; want 1 to %d (one per caller at most)", refused, goroutines)
	}
	// From now on, plain EVALSHA on both nodes.
	nOld, nNew := len(c.old.sent), len(c.new.sent)
	for _, key := range []string{"{old}x", "{new}x"} {
		if _, err := r.RunScript(ctx, ro, []string{key}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(c.old.sent[nOld:], c.new.sent[nNew:]); got != "[EVALSHA ro] [EVALSHA ro]" {
		t.Errorf("after the refusal: %s; want plain EVALSHA on both nodes", got)
	}
}

func TestRunScriptsRetriesNoScriptInOneBatch(t *testing.T) {
	f := newFake()
	f.known[rw.SHA1()] = true
	r := newRunner(t, f)
	calls := []core.ScriptCall{
		{Script: rw, Keys: []string{"{a}"}, Args: []int64{1}},
		{Script: ro, Keys: []string{"{c}"}, Args: []int64{2}},
		{Script: rw, Keys: []string{"{a}", "{b}"}, Args: []int64{3}}, // two slots
		{Script: rw, Keys: []string{"{b}"}, Args: []int64{4, 5, 6, 7}},
		{Script: ro, Keys: nil, Args: []int64{5}},
	}
	res := r.RunScripts(context.Background(), calls)
	if len(res) != len(calls) {
		t.Fatalf("%d results", len(res))
	}
	want := []string{"[1 1]", "[1 2]", "", "[1 4 5 6 7]", "[0 5]"}
	for i, w := range want {
		if i == 2 {
			if !errors.Is(res[i].Err, core.ErrStore) || !errors.Is(res[i].Err, slot.ErrCrossSlot) {
				t.Errorf("call 2: %v; want ErrStore and ErrCrossSlot", res[i].Err)
			}
			continue
		}
		if res[i].Err != nil || fmt.Sprint(res[i].Reply) != w {
			t.Errorf("call %d: %v, %v; want %s", i, res[i].Reply, res[i].Err, w)
		}
	}
	// One DoMulti of EVALSHA, one of EVAL for the two calls that met
	// NOSCRIPT; the refused call is never sent.
	if f.multi != 2 || fmt.Sprint(f.sent) != "[EVALSHA rw EVALSHA_RO ro EVALSHA rw EVALSHA_RO ro EVAL_RO ro EVAL_RO ro]" {
		t.Errorf("%d DoMulti: %v", f.multi, f.sent)
	}
	// Each reply has a slice of its own: appending to one leaves the next.
	_ = append(res[0].Reply, 99, 99, 99)
	if fmt.Sprint(res[1].Reply) != "[1 2]" {
		t.Errorf("replies share memory: %v", res[1].Reply)
	}
}

// A call retried as EVAL after NOSCRIPT runs after the calls that
// followed it in its DoMulti: calls on a key of an earlier call wait for
// the next DoMulti, so that calls on one key run in the order given.
func TestRunScriptsKeepsOrderOnAKey(t *testing.T) {
	f := newFake()
	f.known[rw.SHA1()] = true
	r := newRunner(t, f)
	calls := []core.ScriptCall{
		{Script: ro, Keys: []string{"{a}"}, Args: []int64{1}}, // NOSCRIPT
		{Script: rw, Keys: []string{"{a}"}, Args: []int64{2}},
		{Script: rw, Keys: []string{"{b}"}, Args: []int64{3}},
		{Script: ro, Keys: []string{"{b}"}, Args: []int64{4}},
		{Script: rw, Keys: []string{"{a}"}, Args: []int64{5}},
	}
	for i, res := range r.RunScripts(context.Background(), calls) {
		if want := fmt.Sprint([]int64{1, calls[i].Args[0]}); res.Err != nil || fmt.Sprint(res.Reply) != want {
			t.Errorf("call %d: %v, %v; want %s", i, res.Reply, res.Err, want)
		}
	}
	if want := "[rw[{b}] ro[{a}] rw[{a}] ro[{b}] rw[{a}]]"; fmt.Sprint(f.ran) != want {
		t.Errorf("ran %v, want %s", f.ran, want)
	}
	// Three waves, the first with its EVAL.
	if f.multi != 4 {
		t.Errorf("%d DoMulti, want 4: %v", f.multi, f.sent)
	}

	// Calls on distinct keys go in one DoMulti.
	f = newFake()
	f.known[rw.SHA1()], f.known[ro.SHA1()] = true, true
	r = newRunner(t, f)
	r.RunScripts(context.Background(), []core.ScriptCall{
		{Script: rw, Keys: []string{"{a}", "{a}"}}, {Script: ro, Keys: []string{"{b}"}}, {Script: rw, Keys: nil}, {Script: rw, Keys: []string{"{c}"}},
	})
	if f.multi != 1 {
		t.Errorf("%d DoMulti for calls on distinct keys, want 1", f.multi)
	}
}

// A wave is not sent once the context has ended: its calls fail with
// core.ErrStore and the context's error.
func TestRunScriptsEndedBetweenWaves(t *testing.T) {
	f := newFake()
	f.known[rw.SHA1()] = true
	r := newRunner(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	f.onMulti = cancel
	res := r.RunScripts(ctx, []core.ScriptCall{
		{Script: rw, Keys: []string{"{a}"}, Args: []int64{1}},
		{Script: rw, Keys: []string{"{a}"}, Args: []int64{2}},
	})
	if res[0].Err != nil || fmt.Sprint(res[0].Reply) != "[1 1]" {
		t.Errorf("call 0: %v, %v", res[0].Reply, res[0].Err)
	}
	if !errors.Is(res[1].Err, core.ErrStore) || !errors.Is(res[1].Err, context.Canceled) {
		t.Errorf("call 1: %v; want ErrStore and context.Canceled", res[1].Err)
	}
	if f.multi != 1 || len(f.ran) != 1 {
		t.Errorf("%d DoMulti, ran %v; want the first wave only", f.multi, f.ran)
	}
}

func TestEndedContextSendsNothing(t *testing.T) {
	f := newFake()
	r := newRunner(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.RunScript(ctx, rw, []string{"k"}, nil, nil); !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Errorf("RunScript: %v", err)
	}
	for _, res := range r.RunScripts(ctx, []core.ScriptCall{{Script: rw}, {Script: ro}}) {
		if !errors.Is(res.Err, core.ErrStore) || !errors.Is(res.Err, context.Canceled) {
			t.Errorf("RunScripts: %v", res.Err)
		}
	}
	if len(f.sent) != 0 || f.multi != 0 {
		t.Errorf("sent %v", f.sent)
	}
}

// newRunner returns New("fake", c, opts...), failing t on an error.
func newRunner(t testing.TB, c Client, opts ...Option) *Runner {
	t.Helper()
	r, err := New("fake", c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// plain returns WithoutReadOnlyCommands when plainRO is set.
func plain(plainRO bool) []Option {
	if plainRO {
		return []Option{WithoutReadOnlyCommands()}
	}
	return nil
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		lib  string
		c    Client
		opts []Option
		want string
	}{
		{"fake", nil, nil, "fake: a nil client"},
		{"", newFake(), nil, "no library name"},
		{"fake", newFake(), []Option{WithoutReadOnlyCommands(), nil}, "fake: option 1 is nil"},
	} {
		r, err := New(tt.lib, tt.c, tt.opts...)
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) || r != nil {
			t.Errorf("New(%q, %v, %d options) = %v, %v; want ErrInvalidConfig saying %q", tt.lib, tt.c, len(tt.opts), r, err, tt.want)
		}
	}
}

func TestUnusable(t *testing.T) {
	var nilRunner *Runner
	for name, r := range map[string]*Runner{
		"a nil *scriptproto.Runner":                   nilRunner,
		"a zero scriptproto.Runner, not built by New": {},
	} {
		if got := r.StoreName(); got != "" {
			t.Errorf("%s: StoreName() = %q, want \"\"", name, got)
		}
		if r.SingleNode() {
			t.Errorf("%s: SingleNode() = true", name)
		}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, core.ErrStore) || !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %s: %v; want ErrStore and ErrInvalidConfig saying %q", name, what, err, name)
			}
		}
		got, err := r.RunScript(context.Background(), rw, nil, nil, nil)
		check("RunScript", err)
		if got != nil {
			t.Errorf("%s: RunScript replied %v", name, got)
		}
		res := r.RunScripts(context.Background(), []core.ScriptCall{{Script: rw}, {Script: ro}})
		if len(res) != 2 {
			t.Fatalf("%s: RunScripts: %d results for 2 calls", name, len(res))
		}
		for _, x := range res {
			check("RunScripts", x.Err)
		}
	}
	if got := newRunner(t, newFake()).StoreName(); got != "fake" {
		t.Errorf("StoreName() = %q, want the library's name", got)
	}
}

func TestErrorsWrapAndHint(t *testing.T) {
	const mini = "ERR Error running script: Write commands are not allowed in read-only scripts"
	for _, tt := range []struct {
		s       *core.Script
		plainRO bool
		server  string
		hint    string
	}{
		{ro, false, mini, "WithoutReadOnlyCommands()"},
		{ro, false, "ERR Write commands are not allowed from read-only scripts.", ""}, // Redis 7: the script wrote
		{rw, false, mini, ""},
		{ro, true, mini, ""}, // sent as EVALSHA: the option is already set
		{rw, false, "ERR boom", ""},
		// Sent again as EVALSHA, which fails the same: no option helps.
		{ro, false, "ERR unknown command `EVALSHA_RO`, with args beginning with: ", ""},
		{rw, false, "ERR Error running script (call to f_0123): @user_script:9: @user_script: 9: Write commands not allowed after non deterministic commands. Call redis.replicate_commands() at the start of your script in order to switch to single commands replication mode.", "Redis older than 3.2): give the limiter a Clock"},
	} {
		f := newFake()
		f.err = errors.New(tt.server)
		_, err := newRunner(t, f, plain(tt.plainRO)...).RunScript(context.Background(), tt.s, nil, nil, nil)
		if !errors.Is(err, core.ErrStore) || !errors.Is(err, f.err) || !strings.Contains(err.Error(), `fake: script "`+tt.s.Name()+`"`) {
			t.Errorf("%s: %v; want ErrStore wrapping the server's error", tt.server, err)
		}
		if got := !strings.HasSuffix(err.Error(), tt.server); got != (tt.hint != "") || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%s (%s, plainRO %v): %v; want hint %q", tt.server, tt.s.Name(), tt.plainRO, err, tt.hint)
		}
	}
}

func TestDecodeAny(t *testing.T) {
	if got, err := DecodeAny([]any{int64(1), int64(-2)}, []int64{9}); err != nil || fmt.Sprint(got) != "[9 1 -2]" {
		t.Errorf("%v, %v", got, err)
	}
	for _, v := range []any{nil, "x", int64(1), []any{int64(1), "x"}, []any{[]any{}}} {
		if _, err := DecodeAny(v, nil); !errors.Is(err, core.ErrUnexpectedReply) {
			t.Errorf("%#v: %v", v, err)
		}
	}
}

// static is a Client that replies {1, 2, 3, 4} to everything.
type static struct{}

func (static) Do(_ context.Context, _ Cmd, reply []int64) ([]int64, error) {
	return append(reply, 1, 2, 3, 4), nil
}

func (static) DoMulti(context.Context, []Cmd, []core.ScriptResult) {}

// The protocol adds no allocation to a decision: what a call costs is the
// client's.
func TestRunScriptDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	for name, c := range map[string]Client{"alone": static{}, "through a pipe": newPipe(static{}, 1)} {
		r := newRunner(t, c)
		keys, args, reply := []string{"rk:{k}"}, []int64{-1, 1, 2}, make([]int64, 0, 8)
		ctx := context.Background()
		n := testing.AllocsPerRun(1000, func() {
			if got, err := r.RunScript(ctx, rw, keys, args, reply); err != nil || len(got) != 4 {
				t.Fatal(got, err)
			}
		})
		if n != 0 {
			t.Errorf("RunScript %s allocates %v times", name, n)
		}
	}
}

// BenchmarkLoneCall is what a pipe (Pipelining) adds to a call that finds nothing in
// flight: go test -bench LoneCall ./store/scriptproto/.
func BenchmarkLoneCall(b *testing.B) {
	for name, opts := range map[string][]Option{"alone": nil, "pipe": {Pipelining(true)}} {
		b.Run(name, func(b *testing.B) {
			r := newRunner(b, static{}, opts...)
			keys, args, reply := []string{"rk:{k}"}, []int64{-1, 1, 2}, make([]int64, 0, 8)
			ctx := context.Background()
			for b.Loop() {
				if _, err := r.RunScript(ctx, rw, keys, args, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A batch call marked AnySlot runs with keys in any slots on a runner
// that is one node, and is refused like any other everywhere else.
func TestAnySlotOnlyOnOneNode(t *testing.T) {
	two := []string{"{a}", "{b}"}
	calls := []core.ScriptCall{
		{Script: rw, Keys: two, Args: []int64{1}, AnySlot: true},
		{Script: rw, Keys: two, Args: []int64{2}}, // not marked
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want bool
	}{
		{"never said", nil, false},
		{"a cluster", []Option{SingleNode(false)}, false},
		{"one node", []Option{SingleNode(true)}, true},
		{"one node, then overridden", []Option{SingleNode(true), SingleNode(false)}, false},
	} {
		f := newFake()
		f.known[rw.SHA1()] = true
		r := newRunner(t, f, tc.opts...)
		if r.SingleNode() != tc.want {
			t.Errorf("%s: SingleNode() = %v", tc.name, r.SingleNode())
		}
		res := r.RunScripts(context.Background(), calls)
		if tc.want {
			if res[0].Err != nil || fmt.Sprint(res[0].Reply) != "[2 1]" {
				t.Errorf("%s: the AnySlot call: %v, %v", tc.name, res[0].Reply, res[0].Err)
			}
		} else if !errors.Is(res[0].Err, slot.ErrCrossSlot) {
			t.Errorf("%s: the AnySlot call: %v; want ErrCrossSlot", tc.name, res[0].Err)
		}
		if !errors.Is(res[1].Err, slot.ErrCrossSlot) {
			t.Errorf("%s: the unmarked call: %v; want ErrCrossSlot", tc.name, res[1].Err)
		}
	}
	var nilRunner *Runner
	if nilRunner.SingleNode() || (&Runner{}).SingleNode() {
		t.Error("a nil or zero Runner says it is one node")
	}
}

// crossSlot is a fake server in cluster mode: it refuses, running
// nothing, a command whose keys span slots.
type crossSlot struct{ *fake }

func (c crossSlot) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	c.multi++
	for i, cmd := range cmds {
		if !slot.Same(cmd.Keys) {
			out[i].Err = errors.New("CROSSSLOT Keys in request don't hash to the same slot")
			continue
		}
		out[i].Reply, out[i].Err = c.run(cmd, out[i].Reply)
	}
}

// A server taken for one node that answers CROSSSLOT is a cluster behind
// one address: the call's error wraps slot.ErrCrossSlot, and the runner
// is no longer one node.
func TestCrossSlotTurnsSingleNodeOff(t *testing.T) {
	f := crossSlot{newFake()}
	f.known[rw.SHA1()] = true
	r := newRunner(t, f, SingleNode(true))
	res := r.RunScripts(context.Background(), []core.ScriptCall{
		{Script: rw, Keys: []string{"{a}", "{b}"}, AnySlot: true},
		{Script: rw, Keys: []string{"{a}", "{a}"}, AnySlot: true},
	})
	if !errors.Is(res[0].Err, core.ErrStore) || !errors.Is(res[0].Err, slot.ErrCrossSlot) || !strings.Contains(res[0].Err.Error(), "CROSSSLOT") {
		t.Errorf("refused call: %v; want ErrStore, ErrCrossSlot and the server's error", res[0].Err)
	}
	if res[1].Err != nil {
		t.Errorf("the call in one slot: %v", res[1].Err)
	}
	if r.SingleNode() {
		t.Error("still one node after CROSSSLOT")
	}
	// From now on the runner refuses it before sending.
	sent := len(f.sent)
	res = r.RunScripts(context.Background(), []core.ScriptCall{{Script: rw, Keys: []string{"{a}", "{b}"}, AnySlot: true}})
	if !errors.Is(res[0].Err, slot.ErrCrossSlot) || len(f.sent) != sent {
		t.Errorf("after CROSSSLOT: %v, %d commands sent", res[0].Err, len(f.sent)-sent)
	}
}

// BenchmarkWaves is what RunScripts spends per batch to keep calls on one
// key in order: AllowMany's 100 keys in two calls.
func BenchmarkWaves(b *testing.B) {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("ratekit:tb:{user:%d}", i*7919)
	}
	cmds := []Cmd{{Keys: keys[:64]}, {Keys: keys[64:]}}
	for b.Loop() {
		if _, last := waves(cmds); last != 0 {
			b.Fatal(last)
		}
	}
}

func TestPipelining(t *testing.T) {
	for _, tt := range []struct {
		opts []Option
		pipe bool
	}{
		{nil, false},
		{[]Option{Pipelining(true)}, true},
		{[]Option{Pipelining(true), Pipelining(false)}, false}, // the caller's, after the adapter's
	} {
		r := newRunner(t, newFake(), tt.opts...)
		if _, got := r.c.(*pipe); got != tt.pipe {
			t.Errorf("%d options: pipelined %v, want %v", len(tt.opts), got, tt.pipe)
		}
	}
}

// timeout is a net.Error timeout, as a client reports a read that reached
// the deadline its connection was given.
type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }

// failing is a Client whose commands fail with what fail returns, given
// the call's context and its cancel.
type failing struct {
	cancel context.CancelFunc
	fail   func(ctx context.Context, cancel context.CancelFunc) error
}

func (f failing) Do(ctx context.Context, _ Cmd, _ []int64) ([]int64, error) {
	return nil, f.fail(ctx, f.cancel)
}

func (f failing) DoMulti(ctx context.Context, _ []Cmd, out []core.ScriptResult) {
	for i := range out {
		out[i].Err = f.fail(ctx, f.cancel)
	}
}

// A call that ran out of time, or was cancelled, while the client was
// sending it wraps the context's error, whatever the client said.
func TestFailureWrapsTheContextsEnd(t *testing.T) {
	closed := errors.New("connection closed")
	for _, tt := range []struct {
		name    string
		timeout time.Duration // 0: no deadline
		fail    func(ctx context.Context, cancel context.CancelFunc) error
		want    error
	}{
		{"a net timeout at the deadline", 20 * time.Millisecond, func(ctx context.Context, _ context.CancelFunc) error {
			d, _ := ctx.Deadline()
			time.Sleep(time.Until(d)) // the read deadline: the context may not know yet
			return timeout{}
		}, context.DeadlineExceeded},
		{"the deadline", 20 * time.Millisecond, func(ctx context.Context, _ context.CancelFunc) error {
			<-ctx.Done()
			return closed
		}, context.DeadlineExceeded},
		{"cancelled", 0, func(_ context.Context, cancel context.CancelFunc) error {
			cancel()
			return closed
		}, context.Canceled},
		{"a net timeout before the deadline", time.Hour, func(context.Context, context.CancelFunc) error {
			return timeout{}
		}, nil},
	} {
		check := func(what string, err error) {
			t.Helper()
			ended := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
			if !errors.Is(err, core.ErrStore) || ended != (tt.want != nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("%s: %s: %v; want ErrStore wrapping %v", tt.name, what, err, tt.want)
			}
		}
		newCtx := func() (context.Context, context.CancelFunc) {
			if tt.timeout == 0 {
				return context.WithCancel(context.Background())
			}
			return context.WithTimeout(context.Background(), tt.timeout)
		}
		ctx, cancel := newCtx()
		_, err := newRunner(t, failing{cancel, tt.fail}).RunScript(ctx, rw, nil, nil, nil)
		check("RunScript", err)
		cancel()
		ctx, cancel = newCtx()
		for _, res := range newRunner(t, failing{cancel, tt.fail}).RunScripts(ctx, []core.ScriptCall{{Script: rw}}) {
			check("RunScripts", res.Err)
		}
		cancel()
	}
}
