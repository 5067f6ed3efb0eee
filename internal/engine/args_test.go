package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/store/memory"
)

// argSpec echoes its parameter and the call's arguments; mode 1 stages
// the deletion of its key, mode 0 a value.
var argSpec = engine.NewSpec(engine.Spec{
	Name:   "args",
	Params: []engine.Param{{Name: "x", Field: "X", Kind: engine.Count}},
	Lua:    "local function args(key, now, client_clock, n, mode, x, a, b) return 1, x, tonumber(a), tonumber(b) end",
	Step: func(_ core.Tx, _ string, c engine.Call, p engine.Args) (engine.Reply, engine.State) {
		st := engine.State{Write: true, TTL: time.Second, List: []int64{}}
		if c.Mode == 0 {
			st.List = []int64{p[1]}
		}
		return engine.Reply{1, p[0], p[1], p[2]}, st
	},
})

var argScript = engine.ArgsScript(argSpec, "args:call", []string{"a", "b"})

func TestArgsScript(t *testing.T) {
	lua := argScript.Lua()
	for _, want := range []string{"ARGV[3] + 0, ARGV[4] + 0, ARGV[5], ARGV[6])", "ARGV = now_us, n, mode, x, a, b."} {
		if !strings.Contains(lua, want) {
			t.Errorf("the script lacks %q:\n%s", want, lua)
		}
	}
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := argSpec.Limit("args:", "", 5, []int64{7})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Store: store, Clock: clock, Limits: []engine.Limit{l}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The step replies with its parameter and both arguments, as
	// Remaining, RetryAfter and ResetAfter; 2^53+1 is no float64.
	d, err := e.RunArgs(ctx, argScript, "k", 1, 0, 1<<53+1, 3)
	if err != nil || d.Remaining != 7 || d.RetryAfter != (1<<53+1)*time.Microsecond || d.ResetAfter != 3*time.Microsecond {
		t.Fatalf("RunArgs = %+v, %v; want the parameter and both arguments", d, err)
	}
	if store.Len() != 1 {
		t.Fatalf("%d keys after a staged value", store.Len())
	}
	// An empty List deletes the key.
	if _, err := e.RunArgs(ctx, argScript, "k", 1, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.RunScript(ctx, keyspace.ResetScript, []string{keyspace.Key("args:", "k", "")}, nil, nil); got[0] != 0 {
		t.Fatal("the key outlived a staged deletion")
	}
	if _, err := e.RunArgs(ctx, argScript, "", 1, 0, 0, 0); err == nil {
		t.Fatal("RunArgs with an empty key")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.RunArgs(done, argScript, "k", 1, 0, 0, 0); err == nil {
		t.Fatal("RunArgs with an ended context")
	}
}
