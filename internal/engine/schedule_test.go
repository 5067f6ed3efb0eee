package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

var scheduled = engine.NewSpec(engine.Spec{
	Name: "scheduled",
	Params: []engine.Param{
		{Name: "limit", Field: "Limit", Kind: engine.Count},
		{Name: "start_us", Field: "Start", Kind: engine.Scheduled},
	},
	Lua: "local function scheduled(key, now, client_clock, n, mode, limit, start_us) return 1, 0, 0, 0 end",
	Step: func(core.Tx, string, engine.Call, []int64) (engine.Reply, engine.State) {
		return engine.Reply{1, 0, 0, 0}, engine.State{}
	},
})

// A scheduled parameter is not configured; a schedule needs a Clock; and
// AppendParams gives each call the schedule's values, leaving Params as
// configured.
func TestSchedule(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := engine.New(s, nil, "", "x:", 5, scheduled, []int64{5, 7}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a configured scheduled parameter: %v, want ErrInvalidConfig", err)
	}
	e, err := engine.New(s, nil, "", "x:", 5, scheduled, []int64{5, 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetSchedule(func(int64, []int64) {}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a schedule without a Clock: %v, want ErrInvalidConfig", err)
	}
	e, err = engine.New(s, core.ClockFunc(time.Now), "", "x:", 5, scheduled, []int64{5, 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetSchedule(func(now int64, p []int64) { p[1] = now / 2 }); err != nil {
		t.Fatal(err)
	}
	got := e.AppendParams([]int64{9}, 100)
	if len(got) != 3 || got[0] != 9 || got[1] != 5 || got[2] != 50 {
		t.Errorf("AppendParams: %v, want [9 5 50]", got)
	}
	if p := e.Params(); p[1] != 0 {
		t.Errorf("Params changed: %v", p)
	}
}
