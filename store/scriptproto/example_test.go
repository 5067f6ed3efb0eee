package scriptproto_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// server stands for a Redis server: it knows the scripts it was sent
// with EVAL, answers NOSCRIPT for the others, and runs each script's Go
// twin on its keys, as Redis runs the Lua source.
type server struct {
	loaded map[string]bool
	keys   map[string][]int64
}

func (s *server) Now() int64 { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() }

func (s *server) Get(key string) ([]int64, bool) { v, ok := s.keys[key]; return v, ok }

func (s *server) Put(key string, n int, _ time.Duration) []int64 {
	s.keys[key] = make([]int64, n)
	return s.keys[key]
}

func (s *server) Del(key string) bool { _, ok := s.keys[key]; delete(s.keys, key); return ok }

// client is the part of an adapter its client library forces: send one
// command, send several. A real one calls its library here.
type client struct{ srv *server }

func (c client) Do(_ context.Context, cmd scriptproto.Cmd, reply []int64) ([]int64, error) {
	fmt.Println(cmd.Name, len(cmd.Keys), "key(s)")
	switch cmd.Name {
	case scriptproto.EvalSHA, scriptproto.EvalSHARO:
		if !c.srv.loaded[cmd.Script.SHA1()] {
			return nil, errors.New("NOSCRIPT No matching script. Please use EVAL.")
		}
	default:
		c.srv.loaded[cmd.Script.SHA1()] = true
	}
	return cmd.Script.Twin()(c.srv, cmd.Keys, cmd.Args, reply)
}

func (c client) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	for i, cmd := range cmds {
		out[i].Reply, out[i].Err = c.Do(ctx, cmd, out[i].Reply)
	}
}

// An adapter is a Client and a New. The Runner New returns is the store:
// it sends EVALSHA (EVALSHA_RO for a read-only script, such as Peek's),
// falls back to EVAL on NOSCRIPT, checks every reply, and keeps the
// promises every store keeps.
func ExampleNew() {
	store, err := scriptproto.New("mylib", client{&server{loaded: map[string]bool{}, keys: map[string][]int64{}}})
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(ctx, "user:42")
		fmt.Println(d.Allowed, d.Remaining, err)
	}
	d, err := limiter.Peek(ctx, "user:42")
	fmt.Println(d.Remaining, err)
	fmt.Println(store.StoreName())
	// Output:
	// EVALSHA 1 key(s)
	// EVAL 1 key(s)
	// true 1 <nil>
	// EVALSHA 1 key(s)
	// true 0 <nil>
	// EVALSHA 1 key(s)
	// false 0 <nil>
	// EVALSHA_RO 1 key(s)
	// 0 <nil>
	// mylib
}

// An operator who keeps FUNCTION LOAD for administrators loads each
// script's library ahead, with the administrator's client: Library is
// what to load, and a store then only calls the functions, named by
// Function.
func ExampleLibrary() {
	s := core.NewSplitScript("greet",
		"local function greet(name) return 'hello ' .. name end", // the head: run once, when loaded
		"return greet(ARGV[1])",                                  // the body: run at each FCALL
		nil, false)
	lib := scriptproto.Library(s)
	first, _, _ := strings.Cut(lib, "\n")
	fmt.Println(first == "#!lua name="+scriptproto.Function(s))
	fmt.Println(strings.HasPrefix(scriptproto.Function(s), "ratekit_"))
	// Output:
	// true
	// true
}

// funcClient is a client whose server has Redis functions too, and which
// can load their libraries: a scriptproto.Loader.
type funcClient struct {
	client
	libs map[string]bool
}

func (c funcClient) Do(ctx context.Context, cmd scriptproto.Cmd, reply []int64) ([]int64, error) {
	if cmd.Name != scriptproto.FCall && cmd.Name != scriptproto.FCallRO {
		return c.client.Do(ctx, cmd, reply)
	}
	fmt.Println(cmd.Name, len(cmd.Keys), "key(s)")
	if !c.libs[cmd.Payload()] {
		return nil, errors.New("ERR Function not found")
	}
	return cmd.Script.Twin()(c.srv, cmd.Keys, cmd.Args, reply)
}

func (c funcClient) DoMulti(ctx context.Context, cmds []scriptproto.Cmd, out []core.ScriptResult) {
	for i, cmd := range cmds {
		out[i].Reply, out[i].Err = c.Do(ctx, cmd, out[i].Reply)
	}
}

// Load implements scriptproto.Loader: FUNCTION LOAD on every primary.
func (c funcClient) Load(_ context.Context, code string) []error {
	first, _, _ := strings.Cut(code, "\n")
	name := strings.TrimPrefix(first, "#!lua name=")
	fmt.Println("FUNCTION LOAD")
	c.libs[name], c.libs[name+"_ro"] = true, true
	return []error{nil}
}

// An adapter whose Client is a Loader runs scripts as Redis functions:
// the first call meets a missing function, loads the script's library
// and goes as EVALSHA (then EVAL, the script being new to the server
// too); the next calls are FCALL. WithoutFunctions sends EVALSHA from
// the start.
func ExampleLoader() {
	srv := &server{loaded: map[string]bool{}, keys: map[string][]int64{}}
	for _, opts := range [][]scriptproto.Option{nil, {scriptproto.WithoutFunctions()}} {
		store, err := scriptproto.New("mylib", funcClient{client{srv}, map[string]bool{}}, opts...)
		if err != nil {
			panic(err)
		}
		limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Minute})
		if err != nil {
			panic(err)
		}
		for i := 0; i < 2; i++ {
			d, err := limiter.Allow(context.Background(), "user:42")
			fmt.Println(d.Allowed, err)
		}
	}
	// Output:
	// FCALL 1 key(s)
	// FUNCTION LOAD
	// EVALSHA 1 key(s)
	// EVAL 1 key(s)
	// true <nil>
	// FCALL 1 key(s)
	// true <nil>
	// EVALSHA 1 key(s)
	// true <nil>
	// EVALSHA 1 key(s)
	// true <nil>
}
