package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/internal/params"
)

// The numbers Lua and Go share are written once, in Go: inject puts each
// value where its name stands, and refuses a name it does not know.
func TestInject(t *testing.T) {
	got := inject("if mode == MODE_PEEK and v <= MAX_STATE then ttl = ttl + CLOCK_SLACK_MS else return CORRUPT end -- MODE_REFUND")
	want := fmt.Sprintf("if mode == %d and v <= %d then ttl = ttl + %d else return %d end -- %d",
		ModePeek, params.MaxState, params.ClockSlackMillis, params.Corrupt, ModeRefund)
	if got != want {
		t.Errorf("inject = %q\nwant %q", got, want)
	}
	if got := inject("MAX_STATES CORRUPTED"); got != "MAX_STATES CORRUPTED" {
		t.Errorf("inject replaced part of a longer name: %q", got)
	}
	for mode, name := range modeNames {
		if got := inject(name); got != fmt.Sprint(mode) {
			t.Errorf("inject(%s) = %s, want %d", name, got, mode)
		}
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "MODE_PEKE") {
				t.Errorf("inject of an unknown mode: panic %v, want one naming MODE_PEKE", p)
			}
		}()
		inject("if mode == MODE_PEKE then end")
	}()
	// A composed script holds no name left to inject.
	sh := shape{specs: []*Spec{NewSpec(Spec{
		Name: "probe",
		Lua:  "local function probe(key, now, client_clock, n, mode) if mode == MODE_PEEK then return 1, 0, 0, 0 end return 1, 0, 0, 0 end",
	})}, policy: true, penalty: true}
	head, body := sh.lua()
	if m := constantName.FindString(head + body); m != "" {
		t.Errorf("the composed script still names %s", m)
	}
}
