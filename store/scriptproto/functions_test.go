package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ratekit/ratekit/core"
)

// loading is a fake that loads libraries: Load registers a library's
// two functions, unless err is set, which it returns instead.
type loading struct {
	*fake
	err   error
	loads int
}

func (l *loading) Load(_ context.Context, code string) []error {
	l.loads++
	if l.err != nil {
		return []error{l.err}
	}
	name := strings.TrimPrefix(strings.SplitN(code, "\n", 2)[0], "#!lua name=")
	l.libs[name], l.libs[name+"_ro"] = true, true
	return []error{nil, errors.New("ERR Library '" + name + "' already exists"), errors.New("READONLY You can't write against a read only replica.")}
}

func newLoading() *loading {
	f := newFake()
	f.libs = map[string]bool{}
	return &loading{fake: f}
}

// A function the server lacks: the call goes as EVALSHA (then EVAL on
// NOSCRIPT) and the library is loaded; later calls run the function.
func TestFunctionsLoadWhatIsMissing(t *testing.T) {
	for _, plainRO := range []bool{false, true} {
		l := newLoading()
		r := newRunner(t, l, plain(plainRO)...)
		for i := 0; i < 2; i++ {
			for _, s := range []*core.Script{rw, ro} {
				got, err := r.RunScript(context.Background(), s, []string{"k"}, []int64{7}, nil)
				if err != nil || fmt.Sprint(got) != "[1 7]" {
					t.Fatalf("%s: %v, %v", s.Name(), got, err)
				}
			}
		}
		want := "[FCALL rw EVALSHA rw EVAL rw FCALL_RO ro EVALSHA_RO ro EVAL_RO ro FCALL rw FCALL_RO ro]"
		if plainRO {
			want = "[FCALL rw EVALSHA rw EVAL rw FCALL ro EVALSHA ro EVAL ro FCALL rw FCALL ro]"
		}
		if fmt.Sprint(l.sent) != want || l.loads != 2 {
			t.Errorf("plainRO %v: sent %v, %d loads; want %v, 2", plainRO, l.sent, l.loads, want)
		}
		if len(l.ran) != 4 {
			t.Errorf("ran %v: want each call once", l.ran)
		}
	}
}

// A server without functions (Redis before 7.0) or that refuses them
// turns them off for the store: the call that met the refusal goes as
// EVALSHA, and every later one too. A failure that is not the server's
// answer leaves them on.
func TestFunctionsOff(t *testing.T) {
	for _, tt := range []struct {
		name    string
		setup   func(l *loading)
		want    string
		loads   int
		stillOn bool
	}{
		{"no functions", func(l *loading) { l.libs = nil }, "[FCALL rw EVALSHA rw EVAL rw EVALSHA rw]", 0, false},
		{"FUNCTION LOAD refused", func(l *loading) {
			l.err = errors.New("NOPERM User app has no permissions to run the 'function|load' command")
		}, "[FCALL rw EVALSHA rw EVAL rw EVALSHA rw]", 1, false},
		{"FUNCTION LOAD lost", func(l *loading) { l.err = errors.New("read tcp 127.0.0.1:1: connection reset by peer") }, "[FCALL rw EVALSHA rw EVAL rw FCALL rw EVALSHA rw]", 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoading()
			tt.setup(l)
			r := newRunner(t, l)
			for range 2 {
				if got, err := r.RunScript(context.Background(), rw, []string{"k"}, []int64{7}, nil); err != nil || fmt.Sprint(got) != "[1 7]" {
					t.Fatalf("%v, %v", got, err)
				}
			}
			if fmt.Sprint(l.sent) != tt.want || l.loads != tt.loads || r.fn.off.Load() == tt.stillOn {
				t.Errorf("sent %v, %d loads, off %v; want %v, %d, %v", l.sent, l.loads, r.fn.off.Load(), tt.want, tt.loads, !tt.stillOn)
			}
		})
	}
	// NOPERM on FCALL itself.
	l := newLoading()
	r := newRunner(t, refusing{l})
	if _, err := r.RunScript(context.Background(), rw, nil, nil, nil); err != nil || !r.fn.off.Load() || fmt.Sprint(l.sent) != "[EVALSHA rw EVAL rw]" || l.loads != 0 {
		t.Errorf("NOPERM on FCALL: %v, off %v, sent %v, %d loads", err, r.fn.off.Load(), l.sent, l.loads)
	}
	// WithoutFunctions and a Client that is no Loader: EVALSHA from the start.
	for _, c := range []Client{newLoading(), newLoading().fake} {
		var opts []Option
		if _, ok := c.(Loader); ok {
			opts = append(opts, WithoutFunctions())
		}
		r := newRunner(t, c, opts...)
		if _, err := r.RunScript(context.Background(), rw, nil, nil, nil); err != nil || r.first(rw) != EvalSHA {
			t.Errorf("%T: %v, first %v", c, err, r.first(rw))
		}
	}
}

// refusing answers every FCALL NOPERM, and sends the rest on.
type refusing struct{ *loading }

func (c refusing) Do(ctx context.Context, cmd Cmd, reply []int64) ([]int64, error) {
	if cmd.Name.function() {
		return nil, errors.New("NOPERM User app has no permissions to run the 'fcall' command")
	}
	return c.loading.Do(ctx, cmd, reply)
}

// A batch whose calls meet a missing function loads the library once and
// sends them again in one DoMulti of EVALSHA.
func TestRunScriptsLoadOnce(t *testing.T) {
	l := newLoading()
	l.known[rw.SHA1()] = true
	r := newRunner(t, l)
	calls := []core.ScriptCall{{Script: rw, Keys: []string{"{a}"}}, {Script: rw, Keys: []string{"{b}"}}, {Script: rw, Keys: []string{"{c}"}}}
	for range 2 {
		for i, res := range r.RunScripts(context.Background(), calls) {
			if res.Err != nil || fmt.Sprint(res.Reply) != "[1]" {
				t.Fatalf("call %d: %v, %v", i, res.Reply, res.Err)
			}
		}
	}
	want := "[FCALL rw FCALL rw FCALL rw EVALSHA rw EVALSHA rw EVALSHA rw FCALL rw FCALL rw FCALL rw]"
	if fmt.Sprint(l.sent) != want || l.loads != 1 || l.multi != 3 || len(l.ran) != 6 {
		t.Errorf("sent %v, %d loads, %d DoMulti, ran %d; want %v, 1, 3, 6", l.sent, l.loads, l.multi, len(l.ran), want)
	}
}

// One load at a time per store: a caller that meets a missing function
// while another loads goes as EVALSHA without loading.
func TestFunctionsLoadOneAtATime(t *testing.T) {
	b := &blockingLoader{in: make(chan struct{}), out: make(chan struct{})}
	f := &functions{loader: b}
	done := make(chan struct{})
	go func() { f.load(context.Background(), rw); close(done) }()
	<-b.in
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); f.load(context.Background(), ro) }()
	}
	wg.Wait()
	close(b.out)
	<-done
	if n := b.loads.Load(); n != 1 {
		t.Errorf("%d loads while one was loading, want 1", n)
	}
	f.load(context.Background(), ro)
	if n := b.loads.Load(); n != 2 {
		t.Errorf("%d loads after it, want 2", n)
	}
}

type blockingLoader struct {
	in, out chan struct{}
	loads   atomic.Int64
}

func (b *blockingLoader) Load(context.Context, string) []error {
	if b.loads.Add(1) == 1 {
		close(b.in)
		<-b.out
	}
	return nil
}

// Library holds the head at its top level, the body in the function it
// registers under both names; a script without a head is its body.
func TestLibrary(t *testing.T) {
	s := core.NewSplitScript("split", "local function one() return 1 end", "return {one()}", nil, false)
	lib := Library(s)
	for _, want := range []string{
		"#!lua name=ratekit_" + s.SHA1() + "\n",
		"\nlocal function one() return 1 end\nlocal function call(KEYS, ARGV)\nreturn {one()}\nend\n",
		"redis.register_function('" + Function(s) + "', call)",
		"function_name = '" + Function(s) + "_ro', callback = call, flags = {'no-writes'}",
	} {
		if !strings.Contains(lib, want) {
			t.Errorf("the library lacks %q:\n%s", want, lib)
		}
	}
	if s.Lua() != s.Head()+"\n"+s.Body() || rw.Head() != "" || rw.Body() != rw.Lua() {
		t.Errorf("Lua %q, Head %q, Body %q", s.Lua(), rw.Head(), rw.Body())
	}
	if !strings.Contains(Library(rw), "local function call(KEYS, ARGV)\n"+rw.Lua()+"\nend\n") {
		t.Errorf("a script without a head:\n%s", Library(rw))
	}
	if Function(ro) != "ratekit_"+ro.SHA1()+"_ro" || (Cmd{Name: FCallRO, Script: ro}).Payload() != Function(ro) {
		t.Errorf("Function(ro) %q", Function(ro))
	}
}
