package engine

import (
	"fmt"
	"strings"
	"testing"
)

// NewSpec refuses a Lua step that reads its state with another count than
// the Spec's StateLen, or never reads the state it declares.
func TestStateLenChecked(t *testing.T) {
	const head = "local function s(key, now, client_clock, n, mode) "
	for _, tt := range []struct {
		give     string
		stateLen int
		want     string // in the panic; "" for none
	}{
		{"local a, b = read_state(key, 2)", 2, ""},
		{"local a, b = read_state(key, 2) local c = read_state(key, 2)", 2, ""},
		{"return 1", 0, ""},
		{"local a, b, c = read_state(key, 3)", 2, "another count than its Spec.StateLen (2)"},
		{"local a, b = read_state(key, 2) local c = read_state(key, 3)", 2, "another count"},
		{"return 1", 3, "never calls read_state(key, 3)"},
		{"local a = read_state(key, 1)", 0, "another count than its Spec.StateLen (0)"},
	} {
		func() {
			defer func() {
				p := recover()
				if tt.want == "" && p != nil || tt.want != "" && !strings.Contains(fmt.Sprint(p), tt.want) {
					t.Errorf("NewSpec with StateLen %d and %q: panic %v, want %q", tt.stateLen, tt.give, p, tt.want)
				}
			}()
			NewSpec(Spec{Name: "s", Lua: head + tt.give + " end", StateLen: tt.stateLen})
		}()
	}
}

func TestSharedBounds(t *testing.T) {
	ev := func(at ...int64) []Event {
		out := make([]Event, len(at))
		for i, a := range at {
			out[i] = Event{At: a, Cost: 1}
		}
		return out
	}
	for _, tt := range []struct {
		name string
		err  error
		bad  bool
	}{
		{"rolling: 2 in (5, 15]", RollingBound(2, 10, ev(0, 10, 15)), false},
		{"rolling: 3 in (5, 15]", RollingBound(2, 10, ev(6, 10, 15)), true},
		{"rolling: the window's start is outside it", RollingBound(2, 10, ev(5, 10, 15)), false},
		// 1 at once, 1 per 10 µs: [0, 10] may hold 2.
		{"rate: 2 in [0, 10]", RateBound(1, 1, 10, ev(0, 10)), false},
		{"rate: 2 in [0, 9]", RateBound(1, 1, 10, ev(0, 9)), true},
		{"rate: 3 in [0, 20]", RateBound(1, 1, 10, ev(0, 10, 20)), false},
	} {
		if (tt.err != nil) != tt.bad {
			t.Errorf("%s: %v, want an error: %v", tt.name, tt.err, tt.bad)
		}
	}
}
