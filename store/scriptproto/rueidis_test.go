package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/core"
)

// A client of the rueidis shape, without rueidis: what NewRueidis needs of
// one, and a server that replies what reply says.
type (
	rcmd struct {
		tokens []string
		ro     bool
	}
	rarb     struct{ c rcmd }
	rbuilder struct{}
	rmode    string
	rmsg     struct {
		null bool
		arr  []rmsg
		n    *int64
		err  error // a server error
	}
	rresult struct {
		m   rmsg
		err error // a network error
	}
	rclient struct {
		mode  rmode
		reply func(rcmd) rresult
		sent  []rcmd
	}
)

func (rbuilder) Arbitrary(token ...string) rarb { return rarb{rcmd{tokens: token}} }
func (a rarb) Keys(keys ...string) rarb         { a.c.tokens = append(a.c.tokens, keys...); return a }
func (a rarb) Args(args ...string) rarb         { a.c.tokens = append(a.c.tokens, args...); return a }
func (a rarb) Build() rcmd                      { return a.c }
func (a rarb) ReadOnly() rcmd                   { a.c.ro = true; return a.c }

// rnil is the library's nil reply, an error whose IsNil says so.
type rnil struct{}

func (rnil) Error() string { return "nil message" }
func (rnil) IsNil() bool   { return true }

func (r rresult) Error() error {
	switch {
	case r.err != nil:
		return r.err
	case r.m.null:
		return rnil{}
	}
	return r.m.err
}

func (r rresult) ToArray() ([]rmsg, error) {
	if err := r.Error(); err != nil {
		return nil, err
	}
	if r.m.arr == nil {
		return nil, errors.New("not an array")
	}
	return r.m.arr, nil
}

func (m *rmsg) ToInt64() (int64, error) {
	if m.n == nil {
		return 0, errors.New("not an integer")
	}
	return *m.n, nil
}

func (c *rclient) B() rbuilder { return rbuilder{} }
func (c *rclient) Mode() rmode { return c.mode }
func (c *rclient) Nodes() map[string]*rclient {
	return map[string]*rclient{"fake": c}
}
func (c *rclient) Do(_ context.Context, cmd rcmd) rresult {
	c.sent = append(c.sent, cmd)
	return c.reply(cmd)
}

func (c *rclient) DoMulti(ctx context.Context, multi ...rcmd) []rresult {
	out := make([]rresult, len(multi))
	for i, cmd := range multi {
		out[i] = c.Do(ctx, cmd)
	}
	return out
}

func ints(ns ...int64) rmsg {
	m := rmsg{arr: []rmsg{}}
	for i := range ns {
		m.arr = append(m.arr, rmsg{n: &ns[i]})
	}
	return m
}

func TestNewRueidis(t *testing.T) {
	if r, err := NewRueidis("rfake", RueidisClient[rcmd, rresult, rbuilder, rmode, *rclient](nil)); !errors.Is(err, core.ErrInvalidConfig) || r != nil {
		t.Errorf("a nil client: %v, %v; want ErrInvalidConfig", r, err)
	}
	for mode, one := range map[rmode]bool{"standalone": true, "sentinel": true, "cluster": false} {
		r, err := NewRueidis("rfake", &rclient{mode: mode})
		if err != nil || r.SingleNode() != one || r.StoreName() != "rfake" {
			t.Errorf("mode %s: SingleNode %v, StoreName %q, %v; want %v", mode, r.SingleNode(), r.StoreName(), err, one)
		}
	}
	// The caller's options come after the Runner's own.
	if r, _ := NewRueidis("rfake", &rclient{mode: "cluster"}, SingleNode(true)); !r.SingleNode() {
		t.Error("SingleNode(true) given by the caller did not hold")
	}
}

func TestRueidisCommands(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		want []string
	}{
		{"functions", nil, []string{
			"[FCALL " + Function(rw) + " 1 rk:{k} -1 1099511627776] false",
			"[FCALL_RO " + Function(ro) + " 1 rk:{k} -1 1099511627776] true",
			"[FCALL_RO " + Function(ro) + " 1 {a}] true",
			"[FCALL " + Function(rw) + " 0 7] false",
		}},
		{"EVALSHA", []Option{WithoutFunctions()}, []string{
			"[EVALSHA " + rw.SHA1() + " 1 rk:{k} -1 1099511627776] false",
			"[EVALSHA_RO " + ro.SHA1() + " 1 rk:{k} -1 1099511627776] true",
			"[EVALSHA_RO " + ro.SHA1() + " 1 {a}] true",
			"[EVALSHA " + rw.SHA1() + " 0 7] false",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &rclient{mode: "standalone", reply: func(rcmd) rresult { return rresult{m: ints(1, 2)} }}
			r, err := NewRueidis("rfake", c, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{"rk:{k}"}
			for _, s := range []*core.Script{rw, ro} {
				got, err := r.RunScript(context.Background(), s, keys, []int64{-1, 1 << 40}, []int64{9})
				if err != nil || fmt.Sprint(got) != "[9 1 2]" {
					t.Fatalf("%s: %v, %v", s.Name(), got, err)
				}
			}
			keys[0] = "changed"
			res := r.RunScripts(context.Background(), []core.ScriptCall{{Script: ro, Keys: []string{"{a}"}}, {Script: rw, Args: []int64{7}}})
			for i, x := range res {
				if x.Err != nil || fmt.Sprint(x.Reply) != "[1 2]" {
					t.Errorf("batch call %d: %v, %v", i, x.Reply, x.Err)
				}
			}
			if len(c.sent) != len(tt.want) {
				t.Fatalf("sent %d commands, want %d", len(c.sent), len(tt.want))
			}
			for i, w := range tt.want {
				if got := fmt.Sprint(c.sent[i].tokens, " ", c.sent[i].ro); got != w {
					t.Errorf("command %d: %s, want %s", i, got, w)
				}
			}
		})
	}
}

func TestRueidisReplies(t *testing.T) {
	server, network := errors.New("ERR boom"), errors.New("connection reset")
	for _, tt := range []struct {
		name  string
		res   rresult
		bad   bool  // ErrUnexpectedReply
		cause error // the client's own error, wrapped
	}{
		{"nil reply", rresult{m: rmsg{null: true}}, true, nil},
		{"not an array", rresult{m: rmsg{}}, true, nil},
		{"an element not an integer", rresult{m: rmsg{arr: []rmsg{ints(1).arr[0], {}}}}, true, nil},
		{"server error", rresult{m: rmsg{err: server}}, false, server},
		{"network error", rresult{err: network}, false, network},
	} {
		r, _ := NewRueidis("rfake", &rclient{reply: func(rcmd) rresult { return tt.res }})
		_, err := r.RunScript(context.Background(), rw, nil, nil, nil)
		if !errors.Is(err, core.ErrStore) || errors.Is(err, core.ErrUnexpectedReply) != tt.bad || (tt.cause != nil && !errors.Is(err, tt.cause)) {
			t.Errorf("%s: %v; want ErrStore, ErrUnexpectedReply %v, wrapping %v", tt.name, err, tt.bad, tt.cause)
		}
		if !strings.Contains(fmt.Sprint(err), `rfake: script "rw"`) {
			t.Errorf("%s: %v does not name the library and the script", tt.name, err)
		}
	}
}

// A client of the rueidis shape that allocates nothing of its own: its
// commands count their tokens, and every reply is the same array.
type (
	qarb     struct{ n int }
	qbuilder struct{}
	qclient  struct{ reply rresult }
)

func (qbuilder) Arbitrary(token ...string) qarb { return qarb{len(token)} }
func (a qarb) Keys(keys ...string) qarb         { a.n += len(keys); return a }
func (a qarb) Args(args ...string) qarb         { a.n += len(args); return a }
func (a qarb) Build() int                       { return a.n }
func (a qarb) ReadOnly() int                    { return -a.n }
func (c *qclient) B() qbuilder                  { return qbuilder{} }
func (c *qclient) Mode() rmode                  { return "standalone" }
func (c *qclient) Nodes() map[string]*qclient   { return map[string]*qclient{"fake": c} }
func (c *qclient) Do(context.Context, int) rresult {
	return c.reply
}

func (c *qclient) DoMulti(_ context.Context, multi ...int) []rresult {
	panic("not used")
}

// A call through NewRueidis costs one allocation of its own, the copy of
// its tokens (cmdargs.Call): what the client takes as variadic arguments
// and what it replies are not moved to the heap by the generic code.
func TestRueidisCallAllocatesOnce(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	r, err := NewRueidis("rfake", &qclient{reply: rresult{m: ints(1, 2, 3, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	keys, args, reply := []string{"rk:{k}"}, []int64{-1, 1, 2}, make([]int64, 0, 8)
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		if got, err := r.RunScript(ctx, rw, keys, args, reply); err != nil || len(got) != 4 {
			t.Fatal(got, err)
		}
	})
	if n != 1 {
		t.Errorf("RunScript allocates %v times, want 1", n)
	}
}
