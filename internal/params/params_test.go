package params

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
)

func TestMicros(t *testing.T) {
	if us, err := Micros("W", 1500*time.Millisecond); err != nil || us != 1_500_000 {
		t.Fatalf("1.5s: %d, %v", us, err)
	}
	for _, d := range []time.Duration{0, -1, time.Nanosecond, 1001 * time.Nanosecond, time.Duration(MaxSpan+1) * time.Microsecond, 1<<63 - 1} {
		if _, err := Micros("Window", d); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "Window") {
			t.Errorf("Micros(%v) = %v", d, err)
		}
	}
}

func TestCountAndCost(t *testing.T) {
	for _, v := range []int64{0, -1, MaxCount + 1, -1 << 63} {
		if err := Count("Limit", v); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "Limit") {
			t.Errorf("Count(%d) = %v", v, err)
		}
	}
	if err := Count("Limit", MaxCount); err != nil {
		t.Error(err)
	}
	for _, n := range []int64{0, -1, 11, 1<<63 - 1} {
		if err := Cost(n, 10); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("Cost(%d, 10) = %v", n, err)
		}
	}
	if err := Cost(10, 10); err != nil {
		t.Error(err)
	}
}

func TestNow(t *testing.T) {
	if now, err := Now(nil); now != ServerTime || err != nil {
		t.Errorf("Now(nil) = %d, %v", now, err)
	}
	at := func(t time.Time) core.Clock { return core.ClockFunc(func() time.Time { return t }) }
	if now, err := Now(at(time.UnixMicro(42))); now != 42 || err != nil {
		t.Errorf("Now(42µs) = %d, %v", now, err)
	}
	for _, bad := range []time.Time{time.UnixMicro(-1), time.UnixMicro(MaxTime), {}} {
		if _, err := Now(at(bad)); !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("Now(%v) = %v", bad, err)
		}
	}
}

// CheckClock reads a clock once and refuses a time ratekit cannot compute
// with; nil means the store's clock. A nil *fakeclock.Clock (not
// importable here) reads the zero time, as a nil core.ClockFunc does.
func TestCheckClock(t *testing.T) {
	at := func(t time.Time) core.Clock { return core.ClockFunc(func() time.Time { return t }) }
	for _, ok := range []core.Clock{nil, at(time.UnixMicro(0)), at(time.UnixMicro(MaxTime - 1)), core.ClockFunc(time.Now)} {
		if err := CheckClock(ok); err != nil {
			t.Errorf("CheckClock(%v) = %v", ok, err)
		}
	}
	for _, bad := range []core.Clock{core.ClockFunc(nil), at(time.Time{}), at(time.UnixMicro(-1)), at(time.UnixMicro(MaxTime))} {
		if err := CheckClock(bad); !errors.Is(err, core.ErrInvalidConfig) || !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("CheckClock(at %v) = %v, want ErrInvalidConfig and ErrInvalidTime", bad.Now(), err)
		}
	}
}

func TestTTL(t *testing.T) {
	for _, tt := range []struct {
		us     int64
		client bool
		want   time.Duration
	}{
		{1, false, time.Millisecond},
		{1000, false, time.Millisecond},
		{1001, false, 2 * time.Millisecond},
		{0, false, time.Millisecond},
		{1000, true, time.Minute + time.Millisecond},
	} {
		if got := TTL(tt.us, tt.client); got != tt.want {
			t.Errorf("TTL(%d, %v) = %v, want %v", tt.us, tt.client, got, tt.want)
		}
	}
}

func TestDecision(t *testing.T) {
	d, err := Decision([]int64{1, 4, 0, 2500}, 9)
	want := core.Decision{Allowed: true, Limit: 9, Remaining: 4, ResetAfter: 2500 * time.Microsecond}
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("Decision = %+v, %v", d, err)
	}
	for _, bad := range [][]int64{nil, {1, 2, 3}, {2, 0, 0, 0}, {-2, 0, 0, 0}, {-1, 1, 0, 0}, {0, 0, -5, 0}, {1, 0, 0, -1}, {1, 2, 3, 4, 5}} {
		if _, err := Decision(bad, 1); !errors.Is(err, core.ErrUnexpectedReply) || !errors.Is(err, core.ErrStore) {
			t.Errorf("Decision(%v) = %v", bad, err)
		}
	}
	// A script that refuses its key's state says so with CorruptReply.
	if _, err := Decision(CorruptReply[:], 1); !errors.Is(err, core.ErrCorruptState) || errors.Is(err, core.ErrStore) {
		t.Errorf("Decision(CorruptReply) = %v, want ErrCorruptState alone", err)
	}
}

func TestState(t *testing.T) {
	for _, tt := range []struct {
		vals []int64
		n    int
		want bool
	}{
		{[]int64{0, MaxState}, 2, true},
		{[]int64{1, 2}, 3, false},
		{[]int64{1, 2, 3}, 2, false},
		{[]int64{-1, 2}, 2, false},
		{[]int64{1, MaxState + 1}, 2, false},
		{nil, 0, true},
	} {
		if got := State(tt.vals, tt.n); got != tt.want {
			t.Errorf("State(%v, %d) = %v, want %v", tt.vals, tt.n, got, tt.want)
		}
	}
}
