package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// scheduled replies with its scheduled parameter as Remaining.
var scheduled = engine.NewSpec(engine.Spec{
	Name: "scheduled",
	Params: []engine.Param{
		{Name: "limit", Field: "Limit", Kind: engine.Count},
		{Name: "start_us", Field: "Start", Kind: engine.Scheduled},
	},
	Lua: "local function scheduled(key, now, client_clock, n, mode, limit, start_us) return 1, start_us, 0, 0 end",
	Step: func(_ core.Tx, _ string, _ engine.Call, p engine.Args) (engine.Reply, engine.State) {
		return engine.Reply{1, p[1], 0, 0}, engine.State{}
	},
})

// scriptsOnly is a store seen only as a core.ScriptRunner: every decision
// goes through the composed script's twin, not the in-process path.
type scriptsOnly struct{ core.ScriptRunner }

// A scheduled parameter is not configured; a schedule needs a Clock; and
// each call gets the schedule's values, in a limiter's and in a policy's
// arguments, through scripts and in process, leaving Params as
// configured.
func TestSchedule(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := scheduled.Limit("x:", "", 5, []int64{5, 7}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a configured scheduled parameter: %v, want ErrInvalidConfig", err)
	}
	l, err := scheduled.Limit("x:", "", 5, []int64{5, 0})
	if err != nil {
		t.Fatal(err)
	}
	l.Name = "sched"
	l.Schedule = halfNow{}
	if _, err := engine.New(engine.Config{Store: s, Limits: []engine.Limit{l}}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a schedule without a Clock: %v, want ErrInvalidConfig", err)
	}
	clock := fakeclock.New(time.UnixMicro(1000))
	for _, policy := range []bool{false, true} {
		for _, r := range []core.ScriptRunner{s, scriptsOnly{s}} {
			e, err := engine.New(engine.Config{Store: r, Clock: clock, Limits: []engine.Limit{l}, Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			call, err := e.Call("k", 1)
			if err != nil {
				t.Fatal(err)
			}
			// now, mode, (shadow, penalty in a policy,) limit, start_us, n
			want := []int64{1000, int64(engine.ModeAllow), 5, 500, 1}
			if policy {
				want = []int64{1000, int64(engine.ModeAllow), 0, 0, 5, 500, 1}
			}
			if !slices.Equal(call.Args, want) {
				t.Errorf("policy %v: Call args %v, want %v", policy, call.Args, want)
			}
			d, err := e.Decide(context.Background(), "k", 1, engine.ModeAllow)
			if err != nil || d.Remaining != 500 {
				t.Errorf("policy %v, %T: Decide = %+v, %v; want the scheduled 500 as Remaining", policy, r, d, err)
			}
			if p := e.Limits()[0].Params; p[1] != 0 {
				t.Errorf("Params changed: %v", p)
			}
		}
	}
}

// halfNow schedules parameter 1 at half the call's time.
type halfNow struct{}

func (halfNow) Set(now int64, p engine.Args) engine.Args {
	p[1] = now / 2
	return p
}
